#!/bin/sh
# Boots the memory layouts of physical servers and checks the numbers, on
# Shortbread and (where QEMU can boot it the same way) on Linux:
#   numa   q35, 2 GiB, 4 CPUs in two NUMA nodes (1 GiB and CPUs 0-1, 1 GiB
#          and CPUs 2-3, distance 21): h_numahw must list 2 nodes of
#          about 1 GiB with those CPUs and distances, and t_numa pass
#          (per-node memory adds up, getcpu's node, memory taken from the
#          toucher's node);
#   split  q35, 6 GiB: RAM split around the PCI hole (2 GiB below 4 GiB,
#          4 GiB above): MemTotal at least 98% of it (Linux: 95%), and h_touch gets
#          5 GiB of touched memory, which needs the frames above 4 GiB;
#   big    q35, 16 GiB: MemTotal as above, 2 GiB touched (the
#          host backs only what the guest touches; the split layout
#          already proves the frames above 4 GiB);
#   uefi   the split layout booted by OVMF, whose memory map has many
#          more holes (Shortbread only: tools/linux/run.sh boots Linux
#          directly, not through firmware).
# usage: tools/memtest.sh [CONFIG...]   (default: all; LINUX=0 skips Linux)
# Needs: build/kernel.elf, build/stub.elf, build/user, build/linux.
# Exit status: 0 iff every check passed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
configs=${*:-numa split big uefi}
fail=0
log=$(mktemp) out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT

# run NAME KERNEL(sb|linux) MEM CPUS COMMAND [QEMU args...]
run() {
  name=$1 kern=$2 rmem=$3 cpus=$4 cmd=$5
  shift 5
  lin=0
  [ "$kern" = linux ] && lin=1
  LINUX=$lin MEM=$rmem CPUS=$cpus TIMEOUT=600 QEMU_EXTRA="$*" "$root/tools/run-cmd.sh" - "$cmd" > "$log" 2>&1
  s=$?
  tr -d '\r' < "$log" > "$out"
  grep -E '^(available|node|touched|MemTotal|#|not ok|  *[0-9]+:)' "$out" | sed "s/^/  $name $kern: /"
  if [ $s -ne 0 ]; then
    echo "FAIL $name $kern: status $s"
    tail -20 "$log"
    fail=1
    return 1
  fi
  return 0
}

# expect NAME KERNEL COND MESSAGE: a check (sh) on the last run's output,
# which is in $out.
expect() {
  if out=$out sh -c "$3"; then echo "ok   $1 $2: $4"; else echo "FAIL $1 $2: $4"; fail=1; fi
}

kernels="sb"
[ "${LINUX:-1}" = 1 ] && kernels="sb linux"
numa="-object memory-backend-ram,size=1G,id=m0 -object memory-backend-ram,size=1G,id=m1
 -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-3,memdev=m1
 -numa dist,src=0,dst=1,val=21"

for c in $configs; do
  case $c in
  numa)
    for k in $kernels; do
      run numa "$k" 2G 4 '/tests/h_numahw; /tests/t_numa' $numa || continue
      expect numa "$k" 'grep -q "^available: 2 nodes (0-1)" "$out"' "2 nodes"
      expect numa "$k" 'grep -q "^node 0 cpus: 0 1\$" "$out" && grep -q "^node 1 cpus: 2 3\$" "$out"' "CPUs 0-1 on node 0, 2-3 on node 1"
      for n in 0 1; do
        mb=$(sed -n "s/^node $n size: \([0-9]*\) MB/\1/p" "$out")
        expect numa "$k" "[ '${mb:-0}' -ge 900 ] && [ '${mb:-0}' -le 1024 ]" "node $n size ${mb:-?} MB (900-1024)"
      done
      expect numa "$k" 'grep -Eq "^ +0: +10 +21\$" "$out" && grep -Eq "^ +1: +21 +10\$" "$out"' "distances 10/21"
      expect numa "$k" 'grep -q "^# t_numa: .* 0 failed" "$out"' "t_numa passed"
    done ;;
  split|big|uefi)
    case $c in
    split) mem=6 touch=5120 ks=$kernels fw=bios ;;
    big) mem=16 touch=2048 ks=$kernels fw=bios ;;
    uefi) mem=6 touch=5120 ks=sb fw=uefi ;;
    esac
    for k in $ks; do
      export FIRMWARE=$fw
      run "$c" "$k" "${mem}G" 2 "/tests/h_touch $touch" || continue
      total=$(sed -n 's/^touched .*MemTotal \([0-9]*\) kB.*/\1/p' "$out")
      # Shortbread keeps back only the kernel image, the boot modules
      # and the firmware's holes (under 2%); Linux also its page
      # structures (1.6% of RAM) and more of its image.
      pct=98
      [ "$k" = linux ] && pct=95
      want=$((mem * 1024 * 1024 * pct / 100))
      expect "$c" "$k" "[ '${total:-0}' -ge $want ]" "MemTotal ${total:-?} kB >= $want kB ($pct% of ${mem} GiB)"
    done ;;
  *) echo "memtest: unknown configuration $c" >&2; exit 2 ;;
  esac
done
[ $fail = 0 ] && echo "memtest: all passed" || echo "memtest: FAILED"
exit $fail
