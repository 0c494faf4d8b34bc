"""``strictmcp install``: put strictmcp in front of every MCP server of an assistant's config,
and ``--undo`` it. The decisions are :mod:`.plan`'s; the files are :mod:`.files`'."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from .clients import BY_NAME, CLIENTS, Client, app_data, other_client
from .files import (
    Config,
    InstallError,
    Record,
    backup_path,
    differences,
    digest,
    kept,
    loses_comments,
    parse_config,
    read,
    record_path,
    rewritten,
    write_atomic,
)
from .jsonc import JsoncError, parse
from .plan import Plan, behind_strictmcp, launcher, plan

_EPILOG = """\b
Examples:
  strictmcp install --client claude-desktop --dry-run
  strictmcp install --client vscode
  strictmcp install --client-config .vscode/mcp.json --client vscode --per-server
  strictmcp install --client vscode --undo
Exit status: 0 done (or nothing to change), 2 nothing changed: a usage error, a config that
cannot be read, a policy that exists (--force), an install to undo first.
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.option(
    "--client",
    type=click.Choice([client.name for client in CLIENTS]),
    help="The assistant whose config to change (its documented file on this system).",
)
@click.option(
    "--client-config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The config file to change (any client's; with --client, read as that client's).",
)
@click.option(
    "--per-server",
    is_flag=True,
    help="Wrap each entry in `strictmcp proxy` instead of gathering them behind one gateway.",
)
@click.option(
    "--policy-out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the gateway policy (default: beside --client-config, else "
    "strictmcp/CLIENT-gateway.toml in the user's config directory).",
)
@click.option("--force", is_flag=True, help="Overwrite a policy file that exists.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--undo", is_flag=True, help="Put back the config an install changed.")
def install(
    client: str | None,
    config_file: Path | None,
    per_server: bool,
    policy_out: Path | None,
    force: bool,
    dry_run: bool,
    undo: bool,
) -> None:
    """Put strictmcp in front of every MCP server of an assistant (Claude Desktop, Claude Code,
    Cursor, VS Code, Windsurf, or --client-config FILE).

    The config's server entries are listed, gathered into a gateway policy (their env values
    stay in the client's config) and replaced by one `strictmcp gateway` entry, or with
    --per-server each wrapped in `strictmcp proxy`. Entries already behind strictmcp, and
    those it cannot serve, are left as they are with a note. A backup is kept beside the
    config; --undo restores it.
    """
    try:
        path, chosen = _target(client, config_file)
        # A config that is a link (to a dotfiles repository) is changed where it points,
        # and the link is kept.
        path = path.resolve()
        if undo:
            _undo(path, chosen, dry_run=dry_run)
        else:
            _install(
                path,
                chosen,
                given=config_file is not None,
                per_server=per_server,
                policy_out=policy_out,
                force=force,
                dry_run=dry_run,
            )
    except InstallError as error:
        _fail(str(error))


def _fail(message: str) -> NoReturn:
    click.echo(f"strictmcp install: {message}", err=True)
    sys.exit(2)


def _target(client: str | None, config_file: Path | None) -> tuple[Path, Client]:
    """The config file to change and how to read it."""
    if client is None and config_file is None:
        lines = ["give --client NAME or --client-config FILE; the clients' files here:"]
        for known in CLIENTS:
            found = "found" if known.path.is_file() else "none"
            lines.append(f"  {known.name:<15} {known.path} ({found})")
        raise click.UsageError("\n".join(lines))
    if config_file is None:
        assert client is not None
        return BY_NAME[client].path, BY_NAME[client]
    path = config_file.absolute()
    if client is not None:
        return path, BY_NAME[client]
    try:
        root = parse(path.read_text(encoding="utf-8"), comments=True).value
    except (OSError, UnicodeDecodeError, JsoncError):
        root = None  # said by read(), in the words it uses for every client
    sniffed = isinstance(root, dict) and "servers" in root and "mcpServers" not in root
    return path, other_client(sniffed)


def _default_policy(path: Path, client: Client, config_file_given: bool) -> Path:
    if config_file_given or client.name == "other":
        return path.with_name(f"{path.stem.lstrip('.') or 'mcp'}.strictmcp.toml")
    return app_data() / "strictmcp" / f"{client.name}-gateway.toml"


def _install(
    path: Path,
    client: Client,
    *,
    given: bool,
    per_server: bool,
    policy_out: Path | None,
    force: bool,
    dry_run: bool,
) -> None:
    config = read(path, client)
    if policy_out is None:
        policy_out = _default_policy(path, client, given)
    policy_path = policy_out.absolute()
    source = f"{client.title}'s config {path}" if client.name != "other" else str(path)
    result = plan(
        client,
        config.entries,
        mode="per-server" if per_server else "gateway",
        policy_path=policy_path,
        command=launcher(),
        source=source,
    )
    _list(config, result)
    _other_scopes(config)
    if not result.changed:
        click.echo("Nothing to change.")
        return
    if Record.load(path) is not None:
        raise InstallError(
            f"{path}: an earlier install is recorded ({record_path(path).name}); run "
            "`strictmcp install --undo` first, then install again to gather every server"
        )
    if result.policy_text and policy_path.exists() and not force:
        raise InstallError(f"{policy_path}: exists; give --force to overwrite it, or --policy-out")
    members: list[str | tuple[str, Any]] = [
        kept(config, name) if value is None else (name, value) for name, value in result.members
    ]
    new_text = rewritten(config, members)
    parse_config(path, client, new_text.encode())  # what is written reads back as it must
    _show_change(config, result, dry_run=dry_run)
    if dry_run:
        click.echo("Dry run: nothing written.")
        return
    _write(config, result, new_text.encode(), policy_path)


def _list(config: Config, result: Plan) -> None:
    entries = result.decisions
    title = f"{config.client.title}: " if config.client.name != "other" else ""
    click.echo(f"{title}{config.path} ({len(entries)} server entries)")
    width = min(max((len(d.key) for d in entries), default=0), 24)
    for d in entries:
        action = {"gather": "gateway", "wrap": "proxy", "keep": "kept"}[d.action]
        click.echo(f"  {d.key:<{width}}  {action:<7}  {d.shown}")
        for origin, name in d.moved:
            click.echo(f"  {'':<{width}}           {origin} -> the client entry's env {name}")
        if d.note:
            click.echo(f"  {'':<{width}}           {d.note}")


def _other_scopes(config: Config) -> None:
    """Say so where the file holds servers elsewhere than its top-level servers object
    (Claude Code's local scope: ``projects.PATH.mcpServers`` in ``~/.claude.json``)."""
    projects = config.root.value.get("projects") if config.client.name == "claude-code" else None
    if not isinstance(projects, dict):
        return
    count = sum(
        len(project["mcpServers"])
        for project in projects.values()
        if isinstance(project, dict) and isinstance(project.get("mcpServers"), dict)
    )
    if count:
        click.echo(
            f"  ({count} local-scope entries under projects.*.mcpServers are left as they are: "
            "give a project's .mcp.json with --client-config for its own)"
        )


def _show_change(config: Config, result: Plan, *, dry_run: bool) -> None:
    would = "Would write" if dry_run else "Writing"
    if result.policy_text:
        click.echo(f"\n{would} the policy {result.entry['args'][-1]}:")
        click.echo("".join(f"  {line}\n" for line in result.policy_text.splitlines()), nl=False)
        shown = dict(result.entry)
        if result.env_names:
            # The values stay where they were; the listing above says which each one is.
            shown["env"] = dict.fromkeys(result.env_names, "(moved from the entry above)")
        gathered = ", ".join(d.key for d in result.decisions if d.action == "gather")
        click.echo(f"\n{would} {config.path}: {gathered} replaced by {result.entry_name!r}:")
        click.echo("  " + json.dumps(shown, ensure_ascii=False))
    else:
        click.echo(f"\n{would} {config.path}: each entry marked proxy runs behind strictmcp proxy.")
    if loses_comments(config):
        click.echo(
            f"Comments between the entries of {config.client.key} are not kept (the backup "
            "has them); the rest of the file is kept as it is."
        )


def _write(config: Config, result: Plan, data: bytes, policy_path: Path) -> None:
    path = config.path
    backup = backup_path(path)
    try:
        write_atomic(backup, config.data, mode=0o600, exclusive=True)
    except FileExistsError:
        raise InstallError(
            f"{backup}: exists from an earlier install; move it away first"
        ) from None
    except OSError as error:
        raise InstallError(f"{backup}: cannot be written ({error.strerror})") from None
    written: list[Path] = [backup]
    try:
        policy_digest = ""
        if result.policy_text:
            policy_path.parent.mkdir(parents=True, exist_ok=True)
            encoded = result.policy_text.encode()
            write_atomic(policy_path, encoded, mode=0o644)
            written.append(policy_path)
            policy_digest = digest(encoded)
        record = Record(
            client=config.client.name,
            written=digest(data),
            changed=result.changed,
            added=result.added,
            policy=str(policy_path) if result.policy_text else "",
            policy_digest=policy_digest,
        )
        record.save(path)
        written.append(record_path(path))
        write_atomic(path, data)
    except OSError as error:
        for done in written:
            done.unlink(missing_ok=True)
        raise InstallError(
            f"{error.filename or path}: cannot be written ({error.strerror})"
        ) from None
    click.echo(f"Done. The config before is kept in {backup}.")
    click.echo(
        f"Restart {config.client.title}; undo with: strictmcp install --undo {_again(config)}"
    )


def _again(config: Config) -> str:
    if config.client.name != "other" and config.path == config.client.path.resolve():
        return f"--client {config.client.name}"
    client = f" --client {config.client.name}" if config.client.name != "other" else ""
    return f"--client-config {config.path}{client}"


def _undo(path: Path, client: Client, *, dry_run: bool) -> None:
    record = Record.load(path)
    if record is None:
        raise InstallError(f"{path}: no install of strictmcp is recorded for this file")
    if client.name == "other" and record.client in BY_NAME:
        client = BY_NAME[record.client]
    backup = backup_path(path)
    try:
        original = backup.read_bytes()
        current = path.read_bytes()
    except OSError as error:
        raise InstallError(f"{error.filename}: cannot be read ({error.strerror})") from None
    would = "Would restore" if dry_run else "Restored"
    if digest(current) == record.written:
        if not dry_run:
            write_atomic(path, original)
        click.echo(f"{would} {path} byte for byte (it had not changed since the install).")
        done = [backup]
    else:
        restored = _restore(
            parse_config(path, client, current), parse_config(path, client, original), record
        )
        if not dry_run:
            write_atomic(path, restored.data)
        click.echo(
            f"{would} the entries the install changed in {path}; it had changed since "
            "the install, and those changes are kept:"
        )
        before = parse_config(path, client, original).root.value
        found = differences(before, restored.root.value)
        for line in found[:20]:
            click.echo(f"  {line}")
        if len(found) > 20:
            click.echo(f"  and {len(found) - 20} more")
        if not found:
            click.echo("  (no difference left from the file before the install)")
        click.echo(f"The config before the install is kept in {backup}.")
        done = []
    if dry_run:
        return
    _remove_policy(record)
    for leftover in (*done, record_path(path)):
        leftover.unlink(missing_ok=True)


def _restore(current: Config, original: Config, record: Record) -> Config:
    """``current`` with the entries the install added taken out and those it changed put
    back as ``original`` has them (where they are still the install's)."""
    members: list[str | tuple[str, Any]] = []
    restored: set[str] = set()
    names = current.member_names()
    back = [name for name in record.changed if original.member(name) is not None]
    for name, value in current.entries:
        ours = isinstance(value, dict) and behind_strictmcp(value)
        if name in record.added and ours:
            members += [kept(original, n) for n in back if n not in names]
            restored.update(back)
        elif name in record.changed and ours:
            members.append(kept(original, name))
            restored.add(name)
        else:
            if name in record.changed:
                click.echo(f"  {name}: changed since the install; kept as it is")
            members.append(kept(current, name))
    members += [kept(original, n) for n in back if n not in restored and n not in names]
    if current.servers is None:
        raise InstallError(
            f"{current.path}: has no {current.client.key} any more; nothing restored: the "
            f"config before the install is in {backup_path(current.path)}"
        )
    return parse_config(current.path, current.client, rewritten(current, members).encode())


def _remove_policy(record: Record) -> None:
    if not record.policy:
        return
    policy = Path(record.policy)
    try:
        unchanged = digest(policy.read_bytes()) == record.policy_digest
    except OSError:
        return
    if unchanged:
        policy.unlink(missing_ok=True)
        click.echo(f"Removed the policy {policy} (unchanged since the install).")
    else:
        click.echo(f"Kept the policy {policy}: it has changed since the install.")
