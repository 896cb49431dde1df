"""MSEarth (see README.md): :mod:`.tasks` (prompts, extraction, judges), :mod:`.benchmark` (the declaration)."""
