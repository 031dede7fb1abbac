"""A local model for the LLM proposer: pinned weights (:mod:`.catalogue`), their
fetching and checking (:mod:`.fetch`), and llama.cpp's server (:mod:`.server`)."""
