#!/usr/bin/env bash
# Compares two builds of the BPF objects instruction by instruction, per
# program: the proof that a source change (a refactor, a shared
# helper) left the generated code alone.
#
#   scripts/bpf-insn-diff.sh BEFORE_DIR AFTER_DIR
#
# Each DIR holds *.bpf.o files (copied from the loader's build output,
# target/release/build/rttfair-loader-*/out). Every object is disassembled
# with relocations (llvm-objdump -d -r --no-show-raw-insn: -r names the map
# or helper each ld_imm64/call refers to, so a swapped map would show) and
# split per program (section and function symbol); for each it prints the
# instruction count before and after and "same" or "DIFFERS"; then whether
# the object's BTF types (map definitions included) and symbol table are the
# same. Exit status 1 if anything differs or is missing on one side.
set -euo pipefail
if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -d "$2" ]; then
  echo "usage: $0 BEFORE_DIR AFTER_DIR (folders of *.bpf.o)" >&2
  exit 2
fi
before=$1 after=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# split OBJ DEST: one file per program (function symbol) and section,
# named "section@function" (slashes -> '%'); several struct_ops programs share
# one section, and .text holds the BPF-to-BPF subprograms. Branch labels
# (LBB*) stay inside their function. The first line (the object's path) is
# dropped so the two sides compare.
split() {
  mkdir -p "$2"
  llvm-objdump -d -r --no-show-raw-insn "$1" | tail -n +2 |
    awk -v dest="$2" '
      /^Disassembly of section / {
        sec = $4; sub(/:$/, "", sec); gsub("/", "%", sec); out = ""; next
      }
      /^[0-9a-f]+ <[^>]+>:$/ && $2 !~ /^<LBB/ {
        fn = $2; gsub(/[<>:]/, "", fn)
        out = dest "/" sec "@" fn; next
      }
      out == "" { next }
      # Offsets count from the start of the section: drop them, so one
      # program that changes does not make the ones after it differ.
      /^ +[0-9]+:\t/ { sub(/^ +[0-9]+:/, "  ") }
      /^\t\t[0-9a-f]+:  R_/ { sub(/^\t\t[0-9a-f]+:/, "\t\t") }
      /^[0-9a-f]+ <LBB/ { sub(/^[0-9a-f]+ /, "") }
      { print > out }'
}

# count FILE: instructions (lines "  \t<insn>"), not labels or relocations.
count() { grep -c $'^  \t' "$1" || true; }

status=0
printf '%-22s %-36s %8s %8s  %s\n' object section@program before after result
for b in "$before"/*.bpf.o; do
  obj=$(basename "$b")
  a="$after/$obj"
  if [ ! -f "$a" ]; then
    printf '%-22s %-36s %8s %8s  %s\n' "$obj" - - - "MISSING after"
    status=1
    continue
  fi
  split "$b" "$work/b/$obj"
  split "$a" "$work/a/$obj"
  for s in $( (ls -A "$work/b/$obj"; ls -A "$work/a/$obj") | sort -u); do
    sb="$work/b/$obj/$s" sa="$work/a/$obj/$s"
    nb=$([ -f "$sb" ] && count "$sb" || echo -)
    na=$([ -f "$sa" ] && count "$sa" || echo -)
    if [ -f "$sb" ] && [ -f "$sa" ] && cmp -s "$sb" "$sa"; then
      r=same
    else
      r=DIFFERS
      status=1
    fi
    printf '%-22s %-36s %8s %8s  %s\n' "$obj" "${s//%//}" "$nb" "$na" "$r"
  done
  # The rest the loader and kernel see: types (map definitions included) and
  # the symbol table. Only debug and line info may differ.
  if cmp -s <(bpftool btf dump file "$b"; llvm-objdump -t "$b" | tail -n +3) \
            <(bpftool btf dump file "$a"; llvm-objdump -t "$a" | tail -n +3); then
    r=same
  else
    r=DIFFERS
    status=1
  fi
  printf '%-22s %-36s %8s %8s  %s\n' "$obj" "(BTF types, symbols)" - - "$r"
done
exit $status
