"""The agent core: dispatcher, sessions, the session loop, router and strategies,
trajectory and rules, context, outbox, and the Component, Tool and Provider contracts.
"""
