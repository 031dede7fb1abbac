"""One module per StealthBench task: its scenario modes."""
