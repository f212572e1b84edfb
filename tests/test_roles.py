"""Roles and shapes (gateway.md §16.1 ROL-1..4, §9.1 SHP-1..2; IMP-10; suite-cli-mcp.md DATA-5)."""

import os

from benchwarmers.core import fileio
from benchwarmers.panel import roles


def write(data):
    fileio.write_atomic(roles.path(), data if isinstance(data, str) else fileio.dumps(data))


def test_data5_a_fresh_folder_has_the_shipped_roles_and_shapes_and_nothing_else():
    loaded = roles.load()
    assert loaded == {"roles": roles.SHIPPED_ROLES, "shapes": roles.SHIPPED_SHAPES, "models": {}, "ad_hoc": []}
    assert roles.ad_hoc() == set()
    assert roles.status() == ""


def test_rol1_roles_and_unlisted_aliases_are_general():
    assert set(roles.SHIPPED_ROLES) == {"general", "code", "light", "image", "vision", "decision"}
    assert all(roles.SHIPPED_ROLES.values())  # the model popup shows each role's meaning
    write({"models": {"coder": "code", "eyes": "vision", "odd": 5}, "ad_hoc": []})
    assert roles.role_of("coder") == "code"
    assert roles.role_of("eyes") == "vision"
    assert roles.role_of("nobody") == "general"
    assert roles.role_of("odd") == "general"  # a role that is not a string is no role


def test_rol2_shapes_admit_roles():
    assert roles.SHIPPED_SHAPES == {
        "general": ["general"], "design": ["general"], "prose": ["general"],
        "review": ["general", "code"], "code": ["general", "code"],
        "enumeration": ["general", "code", "light"], "quick": ["general", "light"],
        "vision": ["general", "light", "vision"], "image": ["image"]}
    shapes = roles.load()["shapes"]
    assert "code" in shapes["review"] and "code" not in shapes["prose"]
    assert "vision" in shapes["vision"] and "general" not in shapes["image"]
    assert not any("decision" in admitted for admitted in shapes.values())
    assert "no-such-shape" not in shapes


def test_rol3_the_file_overrides_roles_and_shapes_name_by_name():
    write({"models": {"a": "scribe"}, "ad_hoc": ["b"],
           "roles": {"scribe": "writes minutes", "light": "our wording", "bad": 3},
           "shapes": {"minutes": ["scribe", "general", 7], "quick": ["light"], "broken": "general"}})
    loaded = roles.load()
    assert loaded["roles"]["scribe"] == "writes minutes"
    assert loaded["roles"]["light"] == "our wording"
    assert loaded["roles"]["code"] == roles.SHIPPED_ROLES["code"]  # shipped names the file leaves alone stay
    assert "bad" not in loaded["roles"]
    assert loaded["shapes"]["minutes"] == ["scribe", "general"]
    assert loaded["shapes"]["quick"] == ["light"]
    assert loaded["shapes"]["code"] == ["general", "code"]
    assert "broken" not in loaded["shapes"]
    assert loaded["models"] == {"a": "scribe"} and loaded["ad_hoc"] == ["b"]
    assert roles.role_of("a") in loaded["shapes"]["minutes"]
    assert "general" not in loaded["shapes"]["quick"]


def test_rol3_shipped_names_cannot_be_removed():
    write({"models": {}, "ad_hoc": [], "roles": {}, "shapes": {"image": []}})
    assert set(roles.load()["shapes"]) == set(roles.SHIPPED_SHAPES)
    assert roles.load()["shapes"]["image"] == []


def test_rol3_an_edit_applies_to_the_next_call():
    write({"models": {"a": "code"}, "ad_hoc": []})
    assert roles.role_of("a") == "code"
    write({"models": {"a": "light"}, "ad_hoc": ["a"]})
    assert roles.role_of("a") == "light"
    assert roles.ad_hoc() == {"a"}


def test_rol4_ad_hoc_aliases():
    write({"models": {}, "ad_hoc": ["pricey", "capped", 3]})
    assert roles.ad_hoc() == {"pricey", "capped"}
    assert roles.load()["ad_hoc"] == ["pricey", "capped"]
    write({"models": {}, "ad_hoc": "pricey"})
    assert roles.ad_hoc() == set()


def test_shp1_the_picker_is_told_what_each_option_means():
    assert list(roles.SHAPE_DESCRIPTIONS) == ["general", "design", "prose", "review", "code", "enumeration", "quick"]
    assert "vision" not in roles.SHAPE_DESCRIPTIONS and "image" not in roles.SHAPE_DESCRIPTIONS
    assert "no other" in roles.SHAPE_DESCRIPTIONS["general"]
    assert "code is correct" in roles.SHAPE_DESCRIPTIONS["review"]
    assert "every place" in roles.SHAPE_DESCRIPTIONS["enumeration"]
    assert set(roles.SHAPE_DESCRIPTIONS) <= set(roles.SHIPPED_SHAPES)


def test_shp2_imp10_status_says_missing_or_unreadable():
    assert roles.status() == ""
    os.unlink(roles.path())
    assert roles.status() == "missing"
    assert roles.load()["shapes"] == roles.SHIPPED_SHAPES  # still works on the shipped defaults
    for text in ("{not json", "[]", '"x"', ""):
        write(text)
        assert roles.status() == "unreadable", text
    write("{}")
    assert roles.status() == ""
    write('{"_comment": "only a comment"}')
    assert roles.status() == ""

