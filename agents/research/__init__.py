"""The Researcher's tools and their backends.

`agents.research.tools.TOOLS` are the tools (search_web, fetch_url, search_images,
search_papers, get_paper_authors, get_scholar_details, convert_to_markdown,
document_analyze, image_caption, image_generation), offered to the researcher
role; each family's backends are a dict (`SEARCH`, `FETCH`, `IMAGES`, `PAPERS`);
`agents.research.runtime.build_research` builds the state the tools share. See
docs/research.md.
"""
