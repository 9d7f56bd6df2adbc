"""The interactive API documentation works without internet (a CDN-loaded Swagger UI
showed a blank page on a self-hosted install): every asset it names is served here."""

from __future__ import annotations

import re
from typing import Any

import pytest


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_only_local_assets(client: Any, page: str) -> None:
    html = client.get(page)
    assert html.status_code == 200
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text)
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts, html.text
    for asset in assets:
        assert asset.startswith("/"), f"{page} loads {asset} from another host"
        fetched = client.get(asset)
        assert fetched.status_code == 200, asset
        assert len(fetched.content) > 1000
    assert "openapi.json" in html.text
    assert client.get("/openapi.json").json()["info"]["title"] == "memoryd"
