"""The network at rest and at work.

Its definition, checkpoints, the shipped networks, the device and precision it runs in, the inference-time
forward pass, the packed observation format and export.
"""
