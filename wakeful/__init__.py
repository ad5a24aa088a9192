"""wakeful: an event-driven asynchronous agent daemon."""
