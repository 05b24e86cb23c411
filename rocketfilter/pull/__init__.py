"""Pulls: the broker's getMessage as DataFrame scans, its request checks, and the client side."""
