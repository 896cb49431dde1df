"""EMMA and EMMA-mini (see README.md): :mod:`.tasks` (prompts, scoring), :mod:`.benchmark` (the declaration)."""
