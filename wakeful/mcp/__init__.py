"""MCP client: tools of Model Context Protocol servers, namespaced and deferred.

``config.py`` is the ``[mcp]`` section (imported by the config list, so it never
imports the SDK); ``component.py`` connects the servers in the configure phase
and keeps them connected (``connection.py``) in the run phase; ``adapter.py``
makes each server tool a wakeful tool named ``<server>__<tool>``.
"""
