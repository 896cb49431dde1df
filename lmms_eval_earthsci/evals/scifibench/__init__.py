"""SciFIBench (see README.md): :mod:`.tasks` (prompts, extraction), :mod:`.benchmark` (the declaration)."""
