"""What every part that touches another library stands on, below the integration (``core.adapter``), the hardening
(``core.hardening``) and the model boundary (``core.boundary``); it names none of them.

- :mod:`.inventory`  what an inventory entry is (each part declares its own), the target checks, the warnings
- :mod:`.patching`   the one patch primitive, its records on the runtime ("installed" is asked of them), the audit
- :mod:`.taps`       one tap per upstream callable several parts see, and the order its subscribers run in
- :mod:`.ledger`     the run's ledger: what did not run and why, noted by any part (the hardening sets the exit status)

README.md beside this file shows the layer in ten lines.
"""
