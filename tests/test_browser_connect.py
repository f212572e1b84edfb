"""Signing in from the Endpoints page in real headless Chromium (dashboard.md CN-6, CN-7, CN-9, EP-2): the dialog's
provider choice, the provider's page opened in a new tab, its redirect to the callback page, the endpoint saved and
shown signed in, with no console error. The provider is tests/fake_provider.py on 127.0.0.1; screenshots land in
tests/artifacts/."""

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import keys
from benchwarmers.models import endpoints
from benchwarmers.providers import providers
from test_browser import page, shoot, tab  # noqa: F401 (fixtures used by name)
from test_connect import fake, table  # noqa: F401 (fixtures used by name)


@pytest.fixture
def dash(bench, table):  # noqa: F811 (this module's dashboard: the demo bench plus the fake provider's table)
    srv = serve.serve("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_sign_in_to_the_fake_provider_from_the_endpoints_page_cn6_cn8_ep2(page, dash, fake):  # noqa: F811
    tab(page, "endpoints")
    page.click("#e-add")
    page.wait_for_selector("#cn-choices [data-provider=fakeoauth]")
    assert page.get_attribute("#cn-choices [data-provider=fakeapp]", "disabled") is not None  # no app registered yet
    page.click("#cn-choices [data-provider=fakeoauth]")
    assert page.input_value("#cn-name") == "fakeoauth" and page.is_hidden("#ep-form")
    shoot(page, "connect-dialog")
    with page.context.expect_page() as opened:
        page.click("#cn-go")
    provider_tab = opened.value
    provider_tab.wait_for_selector("text=Fake oauth is connected as fakeoauth")
    assert "It lists 2 models." in provider_tab.inner_text("body")
    shoot(provider_tab, "connect-callback")
    page.wait_for_selector("#cn-onboard")
    assert page.inner_text("#cn-said").startswith("Fake oauth is connected as fakeoauth: it lists 2 models.")
    shoot(page, "connect-done")
    assert endpoints.load()["fakeoauth"].connect["refreshes"] is True and keys.stored()["fakeoauth.refresh"]
    with page.expect_navigation():
        page.keyboard.press("Escape")  # closing the dialog after a sign-in reloads the page
    tab(page, "endpoints")
    block = page.locator(".ep-block", has_text="fakeoauth")
    assert block.locator(".chip", has_text="signed in").count() == 1
    assert block.locator("button", has_text="Sign in again").count() == 1
    page.fill("input[aria-label='Fake app client id']", "my-app.1")
    page.click("button[aria-label='Save the client id for Fake app']")
    page.wait_for_selector("text=Fake app signs in with your app now.")
    assert providers.own_ids()["fakeapp"] == "my-app.1"
    shoot(page, "connect-endpoints")
    first = keys.stored()["fakeoauth"]
    with page.context.expect_page() as opened:  # CN-7: the row's Sign in again starts the flow for that name
        block.locator("button", has_text="Sign in again").click()
    opened.value.wait_for_selector("text=Fake oauth is connected as fakeoauth")
    page.wait_for_selector("#cn-onboard")
    assert page.inner_text("#ed-title") == "Sign in to Fake oauth again" and keys.stored()["fakeoauth"] != first
