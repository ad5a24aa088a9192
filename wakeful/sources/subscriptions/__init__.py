"""Sources the agent connects itself at run time (``connect_channel``, SPEC §3, §6).

A subscription is a durable record (``records.py``) with a kind and a filter;
the component re-arms every active one at start, each in its own task owned by
the component's task group (``arming.py``). One module per kind under
``kinds/`` knows how to check a request and how to watch its source; the
events they raise carry the subscription id (``events.py``).
"""
