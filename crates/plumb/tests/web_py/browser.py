"""A real browser against the replicated wiki: headless Chromium driven by Selenium through
Debian's chromedriver. It opens a page's edit form, types into it, submits it, and checks the
page the gateway redirects to shows the edit (with the user's HTML as text), then edits it
again through the page's own Edit link. A screenshot of the result is left for humans.

Usage: browser.py PORT SCREENSHOT.png   (crates/plumb/tests/web_clients.rs runs it)
"""

import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

port, screenshot = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"

options = Options()
options.binary_location = os.environ.get("PLUMB_CHROMIUM", "/usr/bin/chromium")
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1000,800", "--no-first-run", "--disable-extensions"]:
    options.add_argument(arg)
# Debian's chromedriver, named explicitly: nothing is downloaded.
service = Service(executable_path=os.environ.get("PLUMB_CHROMEDRIVER", "/usr/bin/chromedriver"))
driver = webdriver.Chrome(service=service, options=options)
driver.set_page_load_timeout(30)


def wait_for_url(url, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if driver.current_url == url:
            return
        time.sleep(0.1)
    raise AssertionError(f"expected to arrive at {url}, still at {driver.current_url}")


try:
    driver.get(base + "/wiki/Browser/edit")
    assert driver.title.startswith("Creating Browser"), driver.title
    body = driver.find_element(By.ID, "body")
    body.send_keys("Typed in a browser <b>not bold</b>")
    body.send_keys("\n\n* See [[Home]].")
    driver.find_element(By.ID, "summary").send_keys("from chromium")
    driver.find_element(By.ID, "save").click()
    # The POST is answered 303 See Other: the browser follows it to the page.
    wait_for_url(base + "/wiki/Browser")
    content = driver.find_element(By.ID, "content")
    assert "Typed in a browser <b>not bold</b>" in content.text, content.text
    assert content.find_elements(By.TAG_NAME, "b") == [], "user HTML was rendered"
    link = content.find_element(By.PARTIAL_LINK_TEXT, "Home")
    assert link.get_attribute("href") in (base + "/wiki/Home", base + "/wiki/Home/edit"), link.get_attribute("href")
    edited = driver.find_element(By.ID, "edited").text
    assert edited.startswith("last edited ") and edited.endswith("(revision 1)"), edited

    # Again, through the page's own Edit link: the form holds the current text.
    driver.find_element(By.ID, "edit").click()
    wait_for_url(base + "/wiki/Browser/edit")
    body = driver.find_element(By.ID, "body")
    assert "Typed in a browser" in body.get_property("value")
    body.clear()
    body.send_keys("Second words, from the browser.")
    driver.find_element(By.ID, "save").click()
    wait_for_url(base + "/wiki/Browser")
    assert "Second words" in driver.find_element(By.ID, "content").text
    assert driver.find_element(By.ID, "edited").text.endswith("(revision 2)")
    driver.save_screenshot(screenshot)

    driver.get(base + "/wiki/Browser/history")
    items = driver.find_elements(By.CSS_SELECTOR, "#history li")
    assert len(items) == 2 and "from chromium" in items[1].text, [i.text for i in items]
finally:
    driver.quit()
print("browser: passed")
