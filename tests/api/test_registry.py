"""The one registry type behind probe families, probes, ranker families and loaded plugins:
duplicates refused naming the first owner, built-ins protected, owners recorded, and scoped
undo restoring additions, replacements and removals, nested."""

from __future__ import annotations

import pytest

from abnirml.errors import ConfigError
from abnirml.registry import (
    BUILT_IN,
    Registry,
    current_owner,
    registering_as,
    scoped_registrations,
)


def _colours() -> Registry[str]:
    return Registry("colour", built_ins=lambda: [("red", "#f00"), ("green", "#0f0")],
                    describe=lambda value: f"hex {value}")


def test_built_ins_come_first_and_are_loaded_on_first_use():
    calls: list[int] = []

    def built_ins():
        calls.append(1)
        return [("red", "#f00")]

    colours = Registry("colour", built_ins=built_ins)
    assert calls == []
    colours.add("blue", "#00f", owner="me")
    assert calls == [1]
    assert colours.keys() == ["red", "blue"] and colours.values() == ["#f00", "#00f"]
    assert colours.owner("red") == BUILT_IN and colours.owner("blue") == "me"
    assert colours.is_built_in("red") and not colours.is_built_in("blue")


def test_a_built_in_can_be_neither_replaced_nor_removed():
    colours = _colours()
    with pytest.raises(ConfigError) as raised:
        colours.add("red", "#e00", owner="plugin.py")
    assert str(raised.value) == "colour 'red' is built in (hex #f00); give yours another name"
    with pytest.raises(ConfigError, match=r"^colour 'green' is built in .*cannot be removed$"):
        colours.remove("green")
    colours.add("red", colours.get("red"), owner="plugin.py")    # its own value: a no-op
    assert colours.mapping() == {"red": "#f00", "green": "#0f0"}
    assert colours.owner("red") == BUILT_IN


def test_a_key_another_owner_holds_is_refused_naming_it():
    colours = _colours()
    colours.add("blue", "#00f", owner="first.py")
    with pytest.raises(ConfigError) as raised:
        colours.add("blue", "#00e", owner="second.py")
    assert str(raised.value) == ("colour 'blue' is already registered by first.py; give one "
                                 "of them another name")
    assert colours.get("blue") == "#00f"
    colours.add("blue", "#00e", owner="first.py")     # the same owner again: replaced
    assert colours.get("blue") == "#00e" and colours.keys() == ["red", "green", "blue"]


def test_the_owner_is_the_calling_module_unless_named():
    colours = _colours()
    colours.add("blue", "#00f")
    assert colours.owner("blue") == __name__ == current_owner()
    with registering_as("plugin echo.py"):
        colours.add("cyan", "#0ff")
        assert current_owner() == "plugin echo.py"
    assert colours.owner("cyan") == "plugin echo.py"
    assert current_owner() == __name__


def test_an_unknown_key_is_one_line_with_a_guess():
    colours = _colours()
    assert colours.find("greeen") is None and "greeen" not in colours
    with pytest.raises(ConfigError) as raised:
        colours.get("greeen")
    assert str(raised.value) == "unknown colour 'greeen' (did you mean green?)"
    colours.remove("never-registered")               # forgetting nothing is not an error


def test_undo_restores_additions_replacements_and_removals():
    colours = _colours()
    colours.add("blue", "#00f", owner="me")
    colours.add("black", "#000", owner="me")
    before = colours.revision
    with colours.scoped():
        colours.add("white", "#fff", owner="me")
        colours.add("blue", "#00e", owner="me")
        colours.remove("black")
        assert colours.mapping() == {"red": "#f00", "green": "#0f0", "blue": "#00e",
                                     "white": "#fff"}
    assert colours.mapping() == {"red": "#f00", "green": "#0f0", "blue": "#00f",
                                 "black": "#000"}
    assert colours.owner("black") == "me" and colours.revision != before


def test_nested_scopes_each_restore_what_they_saw():
    colours = _colours()
    with colours.scoped():
        colours.add("blue", "#00f", owner="me")
        with colours.scoped():
            colours.add("white", "#fff", owner="me")
            colours.remove("blue")
            assert colours.keys() == ["red", "green", "white"]
        assert colours.keys() == ["red", "green", "blue"]
        with colours.scoped() as inner:
            colours.add("black", "#000", owner="me")
            inner.keep()
        assert colours.keys() == ["red", "green", "blue", "black"]
    assert colours.keys() == ["red", "green"]


def test_undo_runs_when_the_block_raises():
    colours = _colours()
    with pytest.raises(RuntimeError), colours.scoped():
        colours.add("blue", "#00f", owner="me")
        raise RuntimeError("a plugin failing halfway")
    assert "blue" not in colours


def test_one_scope_restores_every_registry_including_ones_created_inside():
    colours, sizes = _colours(), Registry[int]("size")
    with scoped_registrations():
        colours.add("blue", "#00f", owner="me")
        sizes.add("large", 3, owner="me")
        late = Registry[int]("weight", built_ins=lambda: [("light", 1)])
        late.add("heavy", 9, owner="me")
    assert "blue" not in colours and len(sizes) == 0
    assert late.keys() == ["light"]                  # as new: built-ins only
    with scoped_registrations() as scope:
        sizes.add("small", 1, owner="me")
        scope.keep()
    assert sizes.keys() == ["small"]


def test_the_package_registries_are_undone_by_one_scope():
    from abnirml.probes.family import Family
    from abnirml.probes.family_registry import family_keys, register_family
    from abnirml.rankers import registry as rankers

    families, ranker_families = family_keys(), rankers.families()
    with scoped_registrations():
        register_family(Family(key="scoped", title="Scoped", positive="x"))
        rankers.register("scoped-ranker", lambda spec, env: None)
        assert "scoped" in family_keys() and "scoped-ranker" in rankers.families()
    assert family_keys() == families and rankers.families() == ranker_families


def test_the_package_registries_refuse_what_their_records_protect():
    from abnirml.probes.family_registry import unregister_family
    from abnirml.probes.probe_registry import register, registered
    from abnirml.rankers import registry as rankers

    class Echo:
        name, family, symmetric = "tmp:echo-owned", "tmp", False

        def samples(self, context):
            return iter(())

    with pytest.raises(ConfigError, match=r"^ranker family 'bm25' is built in; it cannot be "
                                          r"removed$"):
        rankers.unregister("BM25")
    with pytest.raises(ConfigError, match=r"^probe family 'tmp' is built in \(Textual-"):
        unregister_family("tmp")
    before = registered()
    with scoped_registrations():
        with registering_as("first.py"):
            register(Echo())
        with pytest.raises(ConfigError) as raised, registering_as("second.py"):
            register(Echo())
        assert str(raised.value) == ("probe 'tmp:echo-owned' is already registered by "
                                     "first.py; give one of them another name")
        assert [p.name for p in registered()] == [*(p.name for p in before), "tmp:echo-owned"]
    assert registered() == before
