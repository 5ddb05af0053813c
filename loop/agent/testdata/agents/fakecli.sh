#!/bin/sh
# fakecli.sh stands in for claude, codex, gemini and opencode in loop/agent's tests (the tests copy
# it to <tmp>/bin/<kind>). It never reads /work/shared or the network.
#
# Every invocation appends one record to $FAKECLI_LOG, one item per line:
#   call <n>                         n counts the invocations, from 1
#   cwd <directory>                  the working directory
#   stdin <type> <bytes>             type: file | chr (/dev/null) | pipe | none (closed) |
#                                    open-pipe (still open after 5 s: the bug to catch);
#                                    the bytes read are saved to $FAKECLI_LOG.stdin.<n>
#   arg <argument>                   one line per argument, in order (an argument with a
#                                    newline cannot be logged: the fake exits 99)
#   env <NAME>=<value>|<NAME> unset  for each name in $FAKECLI_ENV
#   end
# Then it replays case number <n> of $FAKECLI_CASES (space-separated paths under
# $FAKECLI_FIXTURES, without extension; the last one repeats): <case>.stderr to stderr,
# <case>.stdout to stdout, and exits with the code in <case>.rc (0 if absent). When
# <case>.last.txt exists and the arguments hold -o FILE (codex --output-last-message), the
# file is copied to FILE. Special cases:
#   hang              start a child (sleep 60), write "<own pid> <child pid>" to
#                     $FAKECLI_LOG.pids, and wait for it
#   hang-ignore-term  the same with SIGTERM ignored by both (only SIGKILL ends them)
log=${FAKECLI_LOG:?FAKECLI_LOG is not set}
nl='
'
n=1
if [ -f "$log" ]; then
	n=$(($(grep -c '^call ' "$log") + 1))
fi

if [ -p /dev/stdin ]; then stdin=pipe
elif [ -f /dev/stdin ]; then stdin=file
elif [ -c /dev/stdin ]; then stdin=chr
elif [ -e /dev/stdin ]; then stdin=other
else stdin=none
fi
if [ "$stdin" != none ]; then
	timeout 5 cat >"$log.stdin.$n"
	[ $? -eq 124 ] && stdin=open-pipe
else
	: >"$log.stdin.$n"
fi

{
	echo "call $n"
	echo "cwd $(pwd)"
	echo "stdin $stdin $(wc -c <"$log.stdin.$n" | tr -d ' ')"
} >>"$log"
prev= out=
for a in "$@"; do
	case $a in *"$nl"*)
		echo "fakecli: argument with a newline" >&2
		exit 99
		;;
	esac
	printf 'arg %s\n' "$a" >>"$log"
	if [ "$prev" = "-o" ] || [ "$prev" = "--output-last-message" ]; then out=$a; fi
	prev=$a
done
for name in $FAKECLI_ENV; do
	eval "isset=\${$name+x}"
	if [ -n "$isset" ]; then
		eval "val=\$$name"
		printf 'env %s=%s\n' "$name" "$val" >>"$log"
	else
		printf 'env %s unset\n' "$name" >>"$log"
	fi
done
echo end >>"$log"

i=0 c=
for x in $FAKECLI_CASES; do
	i=$((i + 1))
	c=$x
	[ "$i" -eq "$n" ] && break
done

case $c in
hang | hang-ignore-term)
	[ "$c" = hang-ignore-term ] && trap '' TERM
	sleep 60 &
	child=$!
	echo "$$ $child" >"$log.pids"
	wait "$child"
	exit 0
	;;
esac

f=$FAKECLI_FIXTURES/$c
if [ ! -f "$f.stdout" ] && [ ! -f "$f.rc" ]; then
	echo "fakecli: no fixture $f" >&2
	exit 98
fi
[ -f "$f.stderr" ] && cat "$f.stderr" >&2
[ -f "$f.stdout" ] && cat "$f.stdout"
if [ -n "$out" ] && [ -f "$f.last.txt" ]; then cp "$f.last.txt" "$out"; fi
rc=0
[ -f "$f.rc" ] && rc=$(cat "$f.rc")
exit "$rc"
