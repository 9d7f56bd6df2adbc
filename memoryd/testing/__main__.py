"""``python -m memoryd.testing --port N [--anthropic]``: a fake upstream as a process."""

from __future__ import annotations

import argparse

import uvicorn

from memoryd.testing.anthropic_fake import FakeAnthropicUpstream
from memoryd.testing.openai_fake import FakeUpstream


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="a fake LLM provider (OpenAI's API by default)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--anthropic", action="store_true", help="speak Anthropic's Messages API instead"
    )
    args = parser.parse_args(argv)
    fake = FakeAnthropicUpstream() if args.anthropic else FakeUpstream()
    uvicorn.run(fake.app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
