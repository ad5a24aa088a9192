"""The daemon's start, one module per step; :mod:`wakeful.app.lifespan` runs them in order."""
