# hutch's bash kernel: runs cells sent on its stdin, one a line ("ID
# BASE64-OF-CODE", then " BASE64-OF-KEY=VALUE" per variable exported for
# that cell only), in this one shell, so cd, variables and functions
# outlive them, and answers each with a line "\x1e" NONCE " " ID "\n" on
# stderr, then a result line on stdout: "\x1e" NONCE " " JSON "\n", both
# after the cell's own output. Cells read
# /dev/null. SIGINT interrupts a running cell. Once SIGINT is its own, it
# says so on stderr: "\x1e" NONCE " ready\n".
exec 3<&0 0</dev/null
__hutch_mark=$HUTCH_INTERP_NONCE
unset HUTCH_INTERP_NONCE
__hutch_count=0
__hutch_cell() {
	trap 'trap : INT; return 130' INT
	eval "$1"
}
trap : INT
# Ready: a SIGINT from now on is the kernel's own (before, it would end it).
printf '\036%s ready\n' "$__hutch_mark" >&2
while IFS=' ' read -r __hutch_id __hutch_code __hutch_env <&3; do
	__hutch_count=$((__hutch_count + 1))
	__hutch_restore=()
	for __hutch_kv in $__hutch_env; do
		__hutch_kv=$(printf '%s' "$__hutch_kv" | base64 -d)
		__hutch_k=${__hutch_kv%%=*}
		if [ -n "${!__hutch_k+x}" ]; then
			__hutch_restore+=("export $__hutch_k=$(printf '%q' "${!__hutch_k}")")
		else
			__hutch_restore+=("unset $__hutch_k")
		fi
		export "$__hutch_kv"
	done
	__hutch_cell "$(printf '%s' "$__hutch_code" | base64 -d)"
	__hutch_status=$?
	for __hutch_r in "${__hutch_restore[@]}"; do eval "$__hutch_r"; done
	trap : INT
	if [ "$__hutch_status" = 0 ]; then __hutch_state=ok; else __hutch_state=error; fi
	printf '\036%s %s\n' "$__hutch_mark" "$__hutch_id" >&2
	printf '\036%s {"id":%s,"execution_count":%d,"status":"%s","exit_code":%d}\n' "$__hutch_mark" "$__hutch_id" "$__hutch_count" "$__hutch_state" "$__hutch_status"
done
