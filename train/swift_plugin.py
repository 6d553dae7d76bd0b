"""MS-SWIFT's GLM-4.5V template, able to read a user message right after tool results (an `--external_plugins` file).

Servers that refuse images in tool messages (vLLM, OpenAI) get a tool's images in a `user`
message right after the tool results (core/llm/conversation.py), and GLM's chat template renders
that message between the observation and the next assistant turn:
`...</tool_response><|user|>\\n...images...<|assistant|>`. MS-SWIFT's own `glm4_5v` template
encodes a conversation in (user or tool, assistant) pairs and refuses a user message there.
`deckforge_glm4_5v` reads it as GLM renders it: the user turn joins the tool results it
follows, as one observation (masked, like every observation), so the sample holds what the
model was sent. Everything else is MS-SWIFT's `glm4_5v`.

Imported by `train.tokens` (token counts, validation, parity) and passed to `swift sft`
(`--external_plugins`) by `train.launch`.
"""

from __future__ import annotations

from pathlib import Path

from swift.template import StdTemplateInputs, register_template
from swift.template.templates.glm import GLM4_5TemplateMeta, GLM4_5VTemplate

from train.config import SWIFT_TEMPLATE

PLUGIN_FILE = Path(__file__).resolve()
USER_TURN = "<|user|>\n"  # GLM's user header (MS-SWIFT's glm4_5 prompt: '<|user|>\n{{QUERY}}<|assistant|>\n')


class ToolThenUserTemplate(GLM4_5VTemplate):
    def _swift_prepare_inputs(self, inputs: StdTemplateInputs) -> None:
        super()._swift_prepare_inputs(inputs)
        messages = inputs.messages
        i = 1
        while i < len(messages):
            before, message = messages[i - 1], messages[i]
            if before["role"] == "tool" and message["role"] == "user" and isinstance(before["content"], list):
                # the tool results end with the next assistant header: the user turn goes before it
                *results, header = before["content"]
                before["content"] = [*results, USER_TURN, message["content"], header]
                messages.pop(i)
            else:
                i += 1


register_template(GLM4_5TemplateMeta(SWIFT_TEMPLATE, template_cls=ToolThenUserTemplate), exist_ok=True)
