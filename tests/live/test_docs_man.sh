#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The man pages (docs/man/*.8) against the binary: each renders without a warning from man and
# groff, each command of 'mmscope --help' has its page, and the options each command's --help
# lists are exactly those its page describes (short and long), so the two cannot drift apart.
# Also: 'make install' puts the binary and every page under DESTDIR/PREFIX.
# Needs no root and no BPF.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
man_dir=$top/docs/man

if ! command -v man >/dev/null || ! command -v groff >/dev/null; then
	skip "docs_man (man-db and groff-base are not installed: tools/deps.sh installs them)"
	exit 0
fi

# render PAGE : the warnings of rendering PAGE at 80 columns, on stdout (none: empty)
render() {
	{ LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$1" >/dev/null; } 2>&1
}

# help_opts CMD : the options 'mmscope CMD --help' lists, one a line (-p, --pid, ...)
help_opts() {
	"$MMSCOPE" "$1" --help | grep -E '^ +(-[A-Za-z], )?--[a-z]' |
		grep -oE '^ +(-[A-Za-z], )?--[a-z][a-z-]*' | grep -oE -- '--?[A-Za-z][a-z-]*' | sort -u
}

# man_opts PAGE : the options the page describes: the tag lines (after .TP) of its OPTIONS
# section that start with an option, one option a line
man_opts() {
	awk '/^\.SH /{opts = ($2 == "OPTIONS")} opts && tp {print} {tp = /^\.TP/}' "$1" |
		grep -E '^\\fB\\-' | sed 's/\\-/-/g; s/\\f[BIRP]//g' |
		grep -oE -- '(^|, )--?[A-Za-z][a-z-]*' | sed 's/^, //' | sort -u
}

cmds=$("$MMSCOPE" --help | awk '/^Commands:/{c=1; next} c && /^  [a-z]/{print $1} /^$/{c=0}')
[ -n "$cmds" ] || { fail "docs_man (no commands in 'mmscope --help')"; exit 0; }

for page in "$man_dir"/*.8; do
	w=$(render "$page")
	if [ -z "$w" ]; then
		pass "docs_man render $(basename "$page")"
	else
		fail "docs_man render $(basename "$page") (man --warnings: $(printf '%s' "$w" | head -3 | tr '\n' '|'))"
	fi
done

for c in $cmds; do
	page=$man_dir/mmscope-$c.8
	if [ ! -f "$page" ]; then
		fail "docs_man $c (no page docs/man/mmscope-$c.8 for the command '$c' of 'mmscope --help')"
		continue
	fi
	h=$(help_opts "$c")
	m=$(man_opts "$page")
	only_help=$(comm -23 <(echo "$h") <(echo "$m") | tr '\n' ' ')
	only_man=$(comm -13 <(echo "$h") <(echo "$m") | tr '\n' ' ')
	if [ -z "$h" ]; then
		fail "docs_man $c options (no options found in 'mmscope $c --help')"
	elif [ -z "$only_help$only_man" ]; then
		pass "docs_man $c options ($(echo "$h" | wc -l) options in --help and docs/man/mmscope-$c.8)"
	else
		fail "docs_man $c options (in 'mmscope $c --help' but not described in docs/man/mmscope-$c.8: ${only_help:-none}; in docs/man/mmscope-$c.8 but not in --help: ${only_man:-none})"
	fi
	grep -q "^\.BR mmscope\\\\-$c (8)" "$man_dir/mmscope.8" ||
		fail "docs_man mmscope.8 (SEE ALSO lacks mmscope-$c(8))"
	grep -qx "\.B $c" "$man_dir/mmscope.8" ||
		fail "docs_man mmscope.8 (COMMANDS lacks '$c')"
done
# The overview's own options against what main.c accepts.
for o in --version -V --help -h; do
	"$MMSCOPE" "$o" >/dev/null 2>&1 || fail "docs_man mmscope $o (exit $?)"
done
ok "docs_man mmscope.8 options" "mmscope.8 should describe -V, --version, -h, --help and nothing else" \
	test "$(man_opts "$man_dir/mmscope.8" | tr '\n' ' ')" = "--help --version -V -h "
# Every page names its command and is listed in the overview.
for page in "$man_dir"/mmscope-*.8; do
	c=${page##*/mmscope-}
	c=${c%.8}
	echo "$cmds" | grep -qx "$c" || fail "docs_man $(basename "$page") (no command '$c' in 'mmscope --help')"
done

# make install into a scratch DESTDIR: the binary and every page.
dest=$TMP/dest
if make -s --no-print-directory -C "$top" install PREFIX=/usr/local DESTDIR="$dest" >"$TMP/install.log" 2>&1; then
	missing=""
	[ -x "$dest/usr/local/sbin/mmscope" ] || missing="$missing sbin/mmscope"
	for page in "$man_dir"/*.8; do
		cmp -s "$page" "$dest/usr/local/share/man/man8/$(basename "$page")" || missing="$missing $(basename "$page")"
	done
	ok "docs_man make install" "missing or different under DESTDIR:$missing" test -z "$missing"
else
	fail "docs_man make install ($(one_line "$TMP/install.log"))"
fi
