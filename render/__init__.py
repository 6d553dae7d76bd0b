"""The render room: Chromium in its pool of pages, the in-page measurement scripts, and the defect rules read from them."""
