"""What every HTTP interface shares: authentication and its throttle, body and depth
limits, the connection guard, request logs with secrets masked, and /metrics."""
