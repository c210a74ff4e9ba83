#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
#
# SPDX-License-Identifier: Apache-2.0

# Puts the SPDX header on every tracked source file that lacks one (Go, shell, Makefile,
# Dockerfiles, .ci/run); with --check, only lists them and fails. Other files (Markdown,
# YAML, go.mod/go.sum, chart templates) are covered by REUSE.toml. Rerun it after a merge
# brings in new files.
set -euo pipefail
cd "$(dirname "$0")/.."

holder="The gardener-extension-kube-vip authors"
copyright="SPDX-FileCopyrightText: $(date -u +%Y) $holder"
license="SPDX-License-Identifier: Apache-2.0"
check=false
[[ "${1:-}" == "--check" ]] && check=true

missing=()
foreign=()
while IFS= read -r f; do
  [[ -f "$f" ]] || continue
  if grep -q 'SPDX-FileCopyrightText:' "$f" && ! grep -qE "SPDX-FileCopyrightText: [0-9]{4} $holder\$" "$f"; then
    foreign+=("$f")
  fi
  grep -q 'SPDX-License-Identifier:' "$f" && continue
  missing+=("$f")
  $check && continue
  tmp=$(mktemp)
  case "$f" in
    *.go)
      # Before everything, //go:build included (comments may precede it).
      printf '// %s\n//\n// %s\n\n' "$copyright" "$license" >"$tmp"
      cat "$f" >>"$tmp" ;;
    *)
      # After a shebang or a Dockerfile parser directive, which must stay first.
      if head -1 "$f" | grep -qE '^(#!|# *syntax=)'; then
        { head -1 "$f"; printf '# %s\n#\n# %s\n\n' "$copyright" "$license"; tail -n +2 "$f"; } >"$tmp"
      else
        { printf '# %s\n#\n# %s\n\n' "$copyright" "$license"; cat "$f"; } >"$tmp"
      fi ;;
  esac
  cat "$tmp" >"$f" # keeps the file's mode
  rm -f "$tmp"
done < <(git ls-files '*.go' '*.sh' Makefile 'Dockerfile*' .ci/run)

# A header naming another holder is not rewritten: whoever copied the file decides.
if ((${#foreign[@]})); then
  printf 'copyright holder is not "%s": %s\n' "$holder" "${foreign[@]}" >&2
  exit 1
fi
if $check && ((${#missing[@]})); then
  printf 'missing SPDX header: %s\n' "${missing[@]}" >&2
  echo "run hack/license-headers.sh" >&2
  exit 1
fi
((${#missing[@]})) && printf 'added SPDX header: %s\n' "${missing[@]}"
exit 0
