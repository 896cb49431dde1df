"""MuSciClaims (see README.md): :mod:`.tasks` (prompts, parsing, metrics), :mod:`.benchmark` (the declaration)."""
