"""The REST management API in process and over loopback: its shapes, its errors,
isolation of owners through every door, and a fuzzer over /openapi.json."""
