"""``wakeful import openclaw PATH``: an OpenClaw directory into a wakeful config and data.

Reading (:mod:`.source`), deciding what each item becomes (:mod:`.plan`) and writing
(:mod:`.apply`) are apart, so ``--dry-run`` is the same plan with nothing written. Only
the ``wakeful import`` command imports this package; the daemon never does.
"""
