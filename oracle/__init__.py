"""The oracle: the expensive judge behind a program's ``oracle()`` call.

Replayed verdicts or a live LLM judge prompted with the task's rubric (``session``,
``judge``, ``prompt``, ``rubrics``, the verdict ``cache``), and the project's one
OpenAI-compatible client (``openai_client``, ``openai_endpoint``), shared with the
LLM proposer. Imports only base, corpora and views.
"""
