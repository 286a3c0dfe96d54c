#!/usr/bin/env bash
# Fills seeds/<target>/ from the repository's test fixtures (small files only; identical files
# once, named by their MD5). Re-run it when the fixtures change, then commit seeds/.
#   fuzz/seed.sh
set -euo pipefail
cd "$(dirname "$0")"
fti=../tests/fixtures/fti
ovni=../crates/ovni/tests/fixtures

put() { # target file...
    local target=$1; shift
    mkdir -p "seeds/$target"
    for f in "$@"; do
        cp "$f" "seeds/$target/$(md5sum <"$f" | cut -c1-16)"
    done
}

rm -rf seeds
# Checkpoint files of every level (Rank, Pcof, L4), FTI 1.1's and the spec-written ones.
put ftiff_read $(find "$fti/levels/L1" "$fti/levels/L2" "$fti/levels/L4" -name 'Ckpt*-Rank0.fti' -o -name 'Ckpt*-Pcof1.fti') \
    "$fti"/seed-example-model-written/ckpt1-rank0.fti "$fti"/seed-example-model-written/ckpt2-rank0.fti
put rsed_trailer "$fti"/levels/L3/files/step1/Local/node*/*/l3/Ckpt1-RSed*.fti
# ovni_event takes events without the 8-byte stream header.
mkdir -p seeds/ovni_event
for f in $(find "$ovni" -name stream.obs -size +8c); do
    tail -c +9 "$f" >seeds/ovni_event/tmp
    sum=$(md5sum <seeds/ovni_event/tmp | cut -c1-16)
    mv seeds/ovni_event/tmp "seeds/ovni_event/$sum"
done
put ovni_stream $(find "$ovni" -name stream.obs)
# ovniview's model: the same streams and a real crashed fti-rs run (crash and restart).
put ovni_view $(find "$ovni" -name stream.obs) $(find ../crates/ovni-view/tests/fixtures -name stream.obs)
put ovni_stream_json $(find "$ovni" -name stream.json)
put fti_config "$fti"/configs/*.cfg "$fti"/levels/L1/config-after-run.ini
put fti_posix_meta "$fti"/posix-L1/run/Meta/*/l1/sector0-group0.fti
ls seeds | while read -r t; do echo "$t: $(ls "seeds/$t" | wc -l) files, $(du -sk "seeds/$t" | cut -f1) KiB"; done
