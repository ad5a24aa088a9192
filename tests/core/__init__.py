"""The core tier: SessionLoop, Sessions and Dispatcher built directly over a real
SQLite store (tests/support), with a scripted model — no HTTP, no lifespan, no
components. Each test takes milliseconds; the whole tier runs in seconds:

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/core -n 0 -q
"""
