# shellcheck shell=bash
# The fleet figures of scripts/bench.sh --fleet (sourced by it; uses its
# mount_lib, unmount_fs, alive, bucket_servers, proxy_ctl, proxy_counts).
#
# A bucket of FLEET_BOOKS x 100 chapters in moto behind tests/s3/proxy.py,
# its index and snapshot published once with `novelfs index --publish`.
# At 0 and 20 ms a request, with --freshness published (what a mount of a
# published bucket does by default) and --freshness listing (the
# baseline: every directory listed again once per --ttl), in the same run:
#   rounds  1 mount, then --mounts N, each mounted as a fresh sandbox
#           mounts it (default options, an empty --index-dir: it takes the
#           published index), each with an access key of its own so that
#           the proxy's log says whose each request is; every --fleet-period
#           (2 s) for --fleet-duration (60 s; 12 with --quick) an agent round
#           on every mount at once: cat novel_books.txt, one random book's
#           novel_chapters.txt, one random chapter's offset-1.txt. Counted:
#           the proxy's requests by kind for the rounds (a conditional GET
#           is a GET there), each mount's own `novelfs status --json`
#           counters (its 304s), the two compared mount by mount.
#   reader  on a fresh mount, chapters 1..100 of one book in order (each
#           page its footer names); the proxy's max_in_flight.
#   grep    then on that mount `grep -r WORD` (found nowhere) of it all.
#   (reader and grep: --runs runs, a fresh mount each; 1 with --quick)
# The table holds them against the issue's targets (PASS/MISS) and prices
# a day of 1,000 agents at S3 Standard's list prices.

FLEET_BOOKS=20
FLEET_PER=100
FLEET_MNTS=()

# fleet_mount I FRESHNESS: mounts the bucket at $WORK/fleet-mnt-I as a
# fresh sandbox does, signing with the access key fleet-I.
fleet_mount() {
    local i=$1 mnt=$WORK/fleet-mnt-$1
    rm -rf "$WORK/fleet-idx-$i"
    AWS_ACCESS_KEY_ID=fleet-$i NO_DPID=1 mount_lib "s3://$BUCKET_NAME" "$mnt" \
        --endpoint-url "$EP" --index-dir "$WORK/fleet-idx-$i" --freshness "$2"
    FLEET_MNTS+=("$mnt")
}
fleet_unmount_all() {
    local m
    for m in "${FLEET_MNTS[@]}"; do unmount_fs "$m"; done
    FLEET_MNTS=()
}

# fleet_timed LAT FRESHNESS WORKLOAD WANT_RC CMD...: runs CMD with the
# proxy's counts reset first; one flttimed line.
fleet_timed() {
    local lat=$1 fresh=$2 wl=$3 want=$4 rc=0 t0 secs flag="" l g rg h mif; shift 4
    proxy_ctl reset
    t0=$EPOCHREALTIME
    "$@" > "$WORK/fleet.out" 2> "$WORK/fleet.err" || rc=$?
    secs=$(elapsed "$t0" "$EPOCHREALTIME")
    # The reader times itself: the interpreter's start is no part of it.
    [ "$wl" != reader ] || [ "$rc" != 0 ] || secs=$(cut -d' ' -f1 "$WORK/fleet.out")
    if [ "$rc" != "$want" ]; then
        flag=err
        echo "note	fleet: $* exited $rc ($want expected): $(head -c 300 "$WORK/fleet.err" | tr '\n\t' '  ')" >> "$RES"
    fi
    read -r l g rg h mif < <(proxy_counts)
    printf 'flttimed\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$lat" "$fresh" "$wl" "$secs" "$l" "$g" "$rg" "$h" "$mif" "$(load1)" "$flag" >> "$RES"
}

# fleet_rounds LAT FRESHNESS N: N fresh mounts, the agents' rounds on all.
fleet_rounds() {
    local lat=$1 fresh=$2 n=$3 i l g rg h mif t0 secs line load
    proxy_ctl reset
    for i in $(seq 0 $((n - 1))); do fleet_mount "$i" "$fresh"; done
    read -r l g rg h _ < <(proxy_counts)
    printf 'fltmount\t%s\t%s\t%s\t%s\t%s\t%s\n' "$lat" "$fresh" "$n" "$l" "$g" "$((rg + h))" >> "$RES"
    proxy_ctl reset
    t0=$EPOCHREALTIME
    $FLEET_PY rounds "$BIN" "$WORK/fleet-books.txt" "$FLEET_PER" "$FLEET_PERIOD" "$FLEET_DURATION" "$SEED" \
        "${FLEET_MNTS[@]}" > "$WORK/fleet-rounds.out" 2> "$WORK/fleet-rounds.err" ||
        { cat "$WORK/fleet-rounds.err" >&2; echo "bench.sh: the fleet's rounds failed" >&2; exit 1; }
    secs=$(elapsed "$t0" "$EPOCHREALTIME")
    read -r l g rg h mif < <(proxy_counts)
    load=$(load1)
    printf 'fltproxy\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$lat" "$fresh" "$n" "$l" "$g" "$rg" "$h" "$mif" "$load" "$secs" >> "$RES"
    while read -r line; do
        printf 'fltround\t%s\t%s\t%s\t%s\t%s\n' "$lat" "$fresh" "$n" "$(tr ' ' '\t' <<< "$line")" "$load" >> "$RES"
    done < "$WORK/fleet-rounds.out"
    $FLEET_PY keys "$PROXY_PORT" | while read -r line; do
        printf 'fltkey\t%s\t%s\t%s\t%s\n' "$lat" "$fresh" "$n" "$(tr ' ' '\t' <<< "$line")" >> "$RES"
    done
    [ ! -s "$WORK/fleet-rounds.err" ] ||
        echo "note	fleet, $lat ms, $fresh, $n mounts: reads failed: $(head -c 300 "$WORK/fleet-rounds.err" | tr '\n\t' '  ')" >> "$RES"
    for i in "${FLEET_MNTS[@]}"; do alive "$i"; done
    fleet_unmount_all
}

# fleet_publisher: the publisher's rounds while nothing changes: `index
# --publish --every 1` for a few rounds (each round says what it did),
# after its first publish, which builds and publishes the index.
fleet_publisher() {
    local pid rounds l g rg h put
    "$BIN" index "s3://$BUCKET_NAME" --endpoint-url "$EP" --index-dir "$WORK/fleet-idx-publisher" \
        --publish --every 1 > /dev/null 2> "$WORK/fleet-publisher.err" &
    pid=$!
    # Its first publish (at start) is no round: counted from after it.
    for _ in $(seq 1200); do
        grep -q 'published at' "$WORK/fleet-publisher.err" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    proxy_ctl reset
    for _ in $(seq 200); do
        [ "$(grep -c 'unchanged' "$WORK/fleet-publisher.err")" -ge 3 ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    read -r l g rg h put < <($FLEET_PY counts "$PROXY_PORT")
    rounds=$(grep -c 'unchanged' "$WORK/fleet-publisher.err" || true)
    # Killed within 0.1 s of its third round, well before the next (1 s).
    printf 'fltpub\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rounds" "$l" "$g" "$rg" "$h" "$put" "$(load1)" >> "$RES"
}

fleet_figures() {
    local lat fresh n r url rate lrate objects bytes psecs put_rate book counts=(1)
    local runs=$RUNS
    [ -z "$QUICK" ] || runs=1
    [ "$FLEET_MOUNTS" = 1 ] || counts+=("$FLEET_MOUNTS")
    echo "== fleet: $FLEET_BOOKS books x $FLEET_PER chapters, 1 and $FLEET_MOUNTS mounts, rounds every $FLEET_PERIOD s for $FLEET_DURATION s"
    FROOT=$WORK/fleet-lib
    $LIB gen-scale "$FROOT" --books "$FLEET_BOOKS" --chapters "$FLEET_PER" --seed "$SEED"
    find "$FROOT/novels" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort > "$WORK/fleet-books.txt"
    book=$(head -n1 "$WORK/fleet-books.txt")
    BUCKET_NAME=novelfs-fleet
    url=s3://$BUCKET_NAME
    bucket_servers
    read -r objects bytes psecs put_rate < <($LIB s3-put "$FROOT" "$MOTO_PORT" "$BUCKET_NAME" --jobs 8)
    rate=$($LIB s3-rate "$PROXY_PORT" "$BUCKET_NAME" "$FROOT" 2000 --jobs 16)
    read -r _ _ lrate < <($LIB s3-list-rate "$PROXY_PORT" "$BUCKET_NAME" "$FROOT" --jobs 16)
    printf 'fltinfo\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$FLEET_BOOKS" "$FLEET_PER" "$FLEET_MOUNTS" "$FLEET_PERIOD" \
        "$FLEET_DURATION" "$runs" "$objects" >> "$RES"
    printf 'fltrate\t%s\t%s\t%s\n' "$rate" "$lrate" "$(load1)" >> "$RES"
    echo "note	fleet: $objects objects put to moto in $psecs s; the server's own rate, straight through the proxy at 0 ms, 16 clients: $rate GETs/s, $lrate LISTs/s (load $(load1))" >> "$RES"
    export AWS_ACCESS_KEY_ID=novelfs-bench AWS_SECRET_ACCESS_KEY=novelfs-bench-secret AWS_REGION=us-east-1
    fleet_publisher
    # Published once more without --every: a head that promises no cadence
    # is followed however long ago it was confirmed (the one above promised
    # 1 s, and its publisher is gone).
    "$BIN" index "$url" --endpoint-url "$EP" --index-dir "$WORK/fleet-idx-publisher" --publish \
        > /dev/null 2> "$WORK/fleet.err" ||
        { cat "$WORK/fleet.err" >&2; echo "bench.sh: novelfs index --publish failed" >&2; exit 1; }
    TRANSPORT=classic
    for lat in 0 20; do
        proxy_ctl "set?latency_ms=$lat"
        for fresh in published listing; do
            for n in "${counts[@]}"; do
                echo "== fleet, $lat ms, --freshness $fresh: $n mount(s), rounds for $FLEET_DURATION s"
                fleet_rounds "$lat" "$fresh" "$n"
            done
            echo "== fleet, $lat ms, --freshness $fresh: in-order reader and grep -r ($runs runs, a fresh mount each)"
            for r in $(seq "$runs"); do
                fleet_mount 0 "$fresh"
                fleet_timed "$lat" "$fresh" reader 0 $FLEET_PY reader "${FLEET_MNTS[0]}" "$book" "$FLEET_PER"
                fleet_timed "$lat" "$fresh" grep 1 grep -r -- "$WHOLE_WORD" "${FLEET_MNTS[0]}"
                alive "${FLEET_MNTS[0]}"
                fleet_unmount_all
            done
        done
    done
    proxy_ctl "set?latency_ms=0"
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
    bucket_cleanup
}
