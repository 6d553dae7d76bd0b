"""The Researcher's tools and their backends.

`import agents.research.tools` registers the tools (search_web, fetch_url,
search_images, search_papers, get_paper_authors, get_scholar_details,
convert_to_markdown, document_analyze, image_caption, image_generation) for the
researcher role; `agents.research.runtime.build_research` builds the state they
share. See docs/research.md.
"""
