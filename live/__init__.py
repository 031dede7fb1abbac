"""The live corpus: the synthetic agents' commands executed against the real
StealthBench apps (docs/live-corpus.md).

A user's StealthBench checkout supplies the apps (monsearch ships none of their
code); each run gets fresh app processes on loopback, an emulated agent container
(a working folder, an allow-list of programs, a virtual clock) and, where Linux
allows it, a network namespace of its own with no route anywhere.
"""
