"""Watching a running server: the dashboard feed, latency statistics and /metrics.

Owns `dashboard` (GET /ws/dashboard, /api/stats), `metrics` (percentiles, SLO
attainment: pure arithmetic over turn records) and `prometheus` (GET /metrics).
May import pipeline/ (the records it reads) and app.appkeys; no transport.
"""
