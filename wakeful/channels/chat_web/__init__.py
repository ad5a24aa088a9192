"""The web page the daemon serves at ``/``: chat, live timeline, tasks, trajectory.

No build step and nothing fetched from elsewhere: a few static files shipped
as package data, served compressed by the daemon itself.
"""
