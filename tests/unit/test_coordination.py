"""Which leadership an engine gets from its configuration."""

from __future__ import annotations

from masakari import conf as masakari_conf
from masakari import coordination


def test_without_a_backend_every_engine_runs_the_periodic_tasks() -> None:
    leadership = coordination.leadership(masakari_conf.for_tests(), "engine-a")
    assert isinstance(leadership, coordination.Everyone)
    assert leadership.runs_periodic_tasks()


def test_engines_of_one_database_share_a_lock_and_other_databases_do_not() -> None:
    def elected(connection: str) -> coordination.Elected:
        conf = masakari_conf.for_tests(
            **{
                "coordination.backend_url": "redis://127.0.0.1:6379",
                "database.connection": connection,
            }
        )
        leadership = coordination.leadership(conf, "engine")
        assert isinstance(leadership, coordination.Elected)
        return leadership

    one, same, other = (
        elected("sqlite:///a.db"),
        elected("sqlite:///a.db"),
        elected("sqlite:///b.db"),
    )
    assert one.lock_name == same.lock_name != other.lock_name
    # Nothing is reached before start(): an unreachable backend never delays an engine.
    assert not one.is_leader and one.runs_periodic_tasks()


def test_the_lock_name_does_not_depend_on_the_database_password() -> None:
    def name(connection: str) -> bytes:
        conf = masakari_conf.for_tests(**{"database.connection": connection})
        return coordination.lock_name(conf)

    base = "mysql+pymysql://masakari:{}@db.example:3306/masakari?charset=utf8"
    one = name(base.format("s3cret"))
    # Another password (or none) is the same database, hence the same lock: the name says
    # nothing about the password, and an offline search of it learns nothing.
    assert name(base.format("other")) == one
    assert name("mysql://masakari@db.example:3306/masakari") == one
    assert name("mysql+pymysql://masakari:s3cret@db.example:3306/other") != one
    assert name("mysql+pymysql://masakari:s3cret@db2.example:3306/masakari") != one
