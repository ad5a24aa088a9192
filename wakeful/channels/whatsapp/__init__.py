"""WhatsApp: the Business Cloud API's signed webhook in, ``/{phone-number-id}/messages`` out."""
