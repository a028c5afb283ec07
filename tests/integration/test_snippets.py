"""Snippets (issue 18): the passage of each result's text where the
search's words matched, marked, from the texts kept beside the catalog."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.textfield.value import RichTextValue
from tests.integration.test_real_consumers import browser_for

import json
import transaction

FILLER = "The committee met on Tuesday and agreed on the budget for next year. "


def _page(portal, id, html, title="A page", description=""):
    return api.content.create(
        container=portal,
        type="Document",
        id=id,
        title=title,
        description=description,
        text=RichTextValue(html, "text/html", "text/x-html-safe"),
    )


def _site(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(
        portal,
        "port",
        "<p>Ships leave the harbours of Hamburg every morning; the old harbour"
        " master keeps the log. Zope is not spoken here.</p>",
        title="Port life",
    )
    _page(
        portal,
        "long",
        "<p>" + FILLER * 100 + "At last the harbour came in sight.</p>"
        "<p>" + FILLER * 20 + "</p>",
        title="A long report",
    )
    _page(
        portal,
        "tags",
        "<p>Harbour &amp; co &lt;script&gt;alert(1)&lt;/script&gt; sells rope.</p>",
        title="Rope",
    )
    transaction.commit()
    return portal.portal_catalog


def _snippets(catalog, **query) -> dict[str, str | None]:
    return {brain.getId: brain.snippet for brain in catalog(**query)}


def test_the_matched_words_are_marked_with_their_stems(pg_layer, searches):
    catalog = _site(pg_layer["portal"])
    found = catalog(SearchableText="harbour", sort_on="id")
    assert [brain.getId for brain in found] == ["long", "port", "tags"]
    searches.clear()
    snippets = [brain.snippet for brain in found]
    snippet = snippets[1]
    assert "the <mark>harbours</mark> of Hamburg" in snippet
    assert "the old <mark>harbour</mark> master" in snippet
    # One statement for the snippets of the brains a page shows.
    assert None not in snippets
    assert len(searches) == 1


def test_negated_words_are_not_marked(pg_layer):
    catalog = _site(pg_layer["portal"])
    snippets = _snippets(catalog, SearchableText="harbour OR zope")
    assert "<mark>Zope</mark>" in snippets["port"]
    snippets = _snippets(catalog, SearchableText="ships -zope")
    assert snippets == {}  # "port" has zope: not found
    snippets = _snippets(catalog, SearchableText="harbour -rope")
    assert "Zope" in snippets["port"] and "<mark>Zope</mark>" not in snippets["port"]


def test_a_match_deep_in_a_long_text_is_shown_with_ellipses(pg_layer):
    catalog = _site(pg_layer["portal"])
    snippet = _snippets(catalog, SearchableText="harbour")["long"]
    assert "<mark>harbour</mark> came in sight" in snippet
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert len(snippet) < 400


def test_the_text_is_escaped(pg_layer):
    catalog = _site(pg_layer["portal"])
    snippet = _snippets(catalog, SearchableText="rope")["tags"]
    assert "<script" not in snippet
    assert "&amp; co" in snippet
    assert "<mark>rope</mark>" in snippet


def test_a_prefix_and_a_phrase(pg_layer):
    catalog = _site(pg_layer["portal"])
    snippet = _snippets(catalog, SearchableText='harb* "harbour master"')["port"]
    assert "<mark>harbours</mark>" in snippet
    assert "<mark>harbour</mark> <mark>master</mark>" in snippet


def test_no_words_no_snippets(pg_layer):
    catalog = _site(pg_layer["portal"])
    assert set(_snippets(catalog, portal_type="Document").values()) == {None}


def test_this_transactions_texts_are_used(pg_layer):
    portal = pg_layer["portal"]
    catalog = _site(portal)
    portal.port.text = RichTextValue("<p>A quiet harbour now.</p>", "text/html")
    portal.port.reindexObject()
    _page(portal, "fresh", "<p>The harbour was rebuilt.</p>")
    snippets = _snippets(catalog, SearchableText="harbour")
    assert "A quiet <mark>harbour</mark> now" in snippets["port"]
    assert "The <mark>harbour</mark> was rebuilt" in snippets["fresh"]
    transaction.abort()


def test_texts_follow_edits_and_removals(pg_layer):
    portal = pg_layer["portal"]
    catalog = _site(portal)
    portal.port.text = RichTextValue("<p>A quiet harbour now.</p>", "text/html")
    portal.port.reindexObject(idxs=["SearchableText"])
    transaction.commit()
    assert "A quiet <mark>harbour</mark> now" in (
        _snippets(catalog, SearchableText="harbour")["port"]
    )
    zoid = catalog(getId="tags")[0].getRID()
    api.content.delete(obj=portal.tags)
    transaction.commit()
    from plone_pgcatalog.store.connection import ddl_connection

    with ddl_connection(catalog) as conn:
        # The text stays with the object's state (until a pack), but no
        # search finds it.
        rows = conn.execute(
            "SELECT count(*) FROM pgcatalog_texts WHERE zoid = %s", (zoid,)
        ).fetchone()[0]
    assert rows in (0, 1)
    assert "tags" not in _snippets(catalog, SearchableText="rope")


def _restapi(layer, method, path, body=None):
    with browser_for(layer) as browser:
        browser.addHeader("Accept", "application/json")
        if method == "GET":
            browser.open(f"http://nohost/plone/{path}")
        else:
            browser.post(
                f"http://nohost/plone/{path}", json.dumps(body), "application/json"
            )
        return json.loads(browser.contents)


def test_search_endpoints_give_snippets_when_asked(pg_layer):
    _site(pg_layer["portal"])
    answer = _restapi(
        pg_layer,
        "GET",
        "@search?SearchableText=harbour&metadata_fields=snippet&sort_on=id",
    )
    items = {item["@id"].rsplit("/", 1)[1]: item for item in answer["items"]}
    assert "<mark>harbour</mark> came in sight" in items["long"]["snippet"]
    plain = _restapi(pg_layer, "GET", "@search?SearchableText=harbour")
    assert all("snippet" not in item for item in plain["items"])
    answer = _restapi(
        pg_layer,
        "POST",
        "@querystring-search",
        {
            "query": [
                {
                    "i": "SearchableText",
                    "o": "plone.app.querystring.operation.string.contains",
                    "v": "rope",
                }
            ],
            "metadata_fields": ["snippet"],
        },
    )
    [item] = answer["items"]
    assert "<mark>rope</mark>" in item["snippet"]


def test_the_texts_table_is_plain_sql(pg_layer):
    # Any PostgreSQL client reads the texts.
    catalog = _site(pg_layer["portal"])
    from plone_pgcatalog.store.connection import ddl_connection

    with ddl_connection(catalog) as conn:
        config, body = conn.execute(
            "SELECT t.config, t.body FROM pgcatalog_texts AS t"
            " JOIN pgcatalog_objects AS o USING (zoid) WHERE o.path = %s",
            ("/plone/port",),
        ).fetchone()
    assert config == "english"
    assert "Ships leave the harbours of Hamburg" in body


def test_content_cataloged_before_gets_its_text_by_a_reindex(pg_layer):
    from plone_pgcatalog.store.connection import ddl_connection

    catalog = _site(pg_layer["portal"])
    with ddl_connection(catalog) as conn:
        conn.execute("DELETE FROM pgcatalog_texts")
    transaction.commit()  # a snapshot that sees it
    assert set(_snippets(catalog, SearchableText="harbour").values()) == {None}
    catalog.reindexIndex("SearchableText", None)
    transaction.commit()
    snippets = _snippets(catalog, SearchableText="harbour")
    assert "<mark>harbour</mark> came in sight" in snippets["long"]


def test_japanese_matches_are_marked(pg_layer):
    """PostgreSQL's parser reads a run of Japanese as one word: the
    matches are marked by ``fulltext.mark_unspaced``, and the passage
    keeps them (a cut word at its start is at most 40 characters)."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    filler = "会議は火曜日に開かれ来年の予算について合意しました。" * 30
    # No space before the match, one after it: a cut word taken off the
    # passage's start up to that space would take the match.
    _page(portal, "ja", f"<p>{filler}東京タワーは日本の電波塔です。 {filler}</p>")
    _page(portal, "ja-short", "<p>金曜日の会議</p>")
    transaction.commit()
    catalog = portal.portal_catalog
    snippet = _snippets(catalog, SearchableText="電波塔")["ja"]
    assert "日本の<mark>電波塔</mark>です" in snippet
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert len(snippet) < 200
    snippet = _snippets(catalog, SearchableText="金")["ja-short"]
    assert snippet == "<mark>金</mark>曜日の会議"


def test_latin_and_japanese_words_of_one_search_are_both_marked(pg_layer):
    """A Japanese site's search often names a product in Latin letters:
    both its words are marked in the passage (as Plone's lexicon splits
    "Plone入門", "Plone" is a word of its own)."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(
        portal,
        "mixed",
        "<p>今月の勉強会ではPlone入門の本を読みました。Plonesの話とKÖLNの話も。</p>",
    )
    transaction.commit()
    catalog = portal.portal_catalog
    # As Plone's search form sends it: a wildcard after each word.
    snippet = _snippets(catalog, SearchableText="Plone* 入門*")["mixed"]
    assert snippet == (
        "今月の勉強会では<mark>Plone入門</mark>の本を読みました。"
        "<mark>Plones</mark>の話とKÖLNの話も。"
    )
    snippet = _snippets(catalog, SearchableText="köln 勉強")["mixed"]
    assert snippet == (
        "今月の<mark>勉強</mark>会ではPlone入門の本を読みました。"
        "Plonesの話と<mark>KÖLN</mark>の話も。"
    )


def test_a_user_who_may_find_but_not_view_an_item_sees_no_snippet(pg_layer):
    """A workflow that lists an item to Anonymous ("Access contents
    information") without letting them read it ("View"): its snippet, a
    passage of its text, is for those who may view it (found by a helper's
    security probe).  Plone's own workflows grant both alike: no object is
    loaded for the check there."""
    from plone.app.testing import login
    from plone.app.testing import logout
    from plone.app.testing import TEST_USER_NAME
    from plone_pgcatalog import security

    portal = pg_layer["portal"]
    catalog = _site(portal)
    assert security.text_hidden_states(portal.portal_catalog) == frozenset()
    for page in ("port", "long"):
        api.content.transition(obj=portal[page], transition="publish")
    transaction.commit()
    logout()
    assert _snippets(catalog, SearchableText="harbour")["port"]
    login(portal, TEST_USER_NAME)
    workflow = portal.portal_workflow["simple_publication_workflow"]
    published = workflow.states["published"]
    published.setPermission("View", False, ["Manager", "Site Administrator"])
    workflow.updateRoleMappingsFor(portal.port)
    portal.port.reindexObjectSecurity()
    transaction.commit()
    hidden = security.text_hidden_states(portal.portal_catalog)
    assert ("Document", "published") in hidden
    assert ("Document", "private") not in hidden
    logout()
    anonymous = _snippets(catalog, SearchableText="harbour")
    assert set(anonymous) == {"port", "long"}  # found, as with ZCatalog
    assert anonymous["port"] is None
    # Another page of the same type and state, whose own View is granted.
    assert "<mark>harbour</mark>" in anonymous["long"]
    login(portal, TEST_USER_NAME)
    assert "<mark>" in _snippets(catalog, SearchableText="harbour")["port"]


def test_comments_are_the_only_items_checked_on_a_site_with_discussion():
    """plone.app.discussion's comment workflow grants "View" by acquisition
    (from the commented item) and "Access contents information" to
    Anonymous: comments of private items are found, not readable.  Only
    they are checked (loaded) before their snippet is given."""
    from plone_pgcatalog import security
    from tests.conftest import collect_in

    hidden = collect_in(
        "pg discussion",
        lambda layer: security.text_hidden_states(layer["portal"].portal_catalog),
    )
    assert ("Discussion Item", "published") in hidden
    assert not any(portal_type == "Document" for portal_type, _ in hidden)
