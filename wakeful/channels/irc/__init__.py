"""IRC: channels and private messages, over a protocol client of its own."""
