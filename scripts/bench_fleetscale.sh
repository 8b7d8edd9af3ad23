# shellcheck shell=bash
# The figures of scripts/bench.sh --fleet --chapters N (sourced by it; uses
# its mount_lib, unmount_fs, alive, bucket_servers, proxy_ctl, load1 and
# bench_fleet.sh's fleet_mount): a published library of N chapters (books
# of 100) held against the targets of a fleet at scale. Every figure is
# measured at 20 ms a request, with the proxy's counts (requests by kind,
# bytes each way) reset right before it:
#   publisher  `novelfs index --publish` first run over the library (its
#              seconds, requests, GETs in flight, bytes written); then
#              `--every 1` for a few rounds with nothing changed (each
#              round's requests)
#   fresh      `novelfs mount` with an empty --index-dir to the end of a cat
#              of one chapter's first page, and the bytes fetched by then;
#              on another fresh mount, the first cat of novel_books.txt
#   sixteen    16 fresh mounts started at once, each to its first page
#   replaced   one chapter replaced in the bucket (straight to the server)
#              and published: what the publisher writes; then a mount that
#              had read that book reads the chapter until it shows (how
#              long after the publish ended, what it fetched), then one
#              that had read another book only
#   rounds     --mounts fresh mounts, the publisher running --every 300,
#              agent rounds (bench_fleet.py rounds: novel_books.txt, a
#              random book's novel_chapters.txt, a random page) every
#              --fleet-period s for --fleet-duration s: requests a round by
#              what they fetched (pages, the head, the books' pieces), the
#              day's bill of 1,000 agents at S3 Standard's list prices
# The server is moto behind tests/s3/proxy.py; its own GET and LIST rates
# (16 clients, 0 ms) are measured first, and a figure that comes near them
# is said to be capped by moto. With --fleet-server s3s-fs, crates.io's
# s3s-fs (0.14.1, in ~/.cache/novelfs/s3s-fs or $NOVELFS_S3S_FS) serves the
# generated folder as the bucket, nothing uploaded (for a large N; its
# listings give no ETag); without it the figures are skipped with a note.

FLS_PY="python3 $HERE/bench_fleetscale.py"
FLS_MARK=FLEETMARK舰队

# fls_counts: LIST GET RANGED_GET HEAD PUT DOWN_BYTES UP_BYTES MAX_IN_FLIGHT
fls_counts() { $FLS_PY counts "$PROXY_PORT"; }

# fls_record FIGURE SECONDS: one flsfig line, the proxy's counts since the
# last reset with it.
fls_record() {
    printf 'flsfig\t%s\t%s\t%s\t%s\n' "$1" "$2" "$(fls_counts | tr ' ' '\t')" "$(load1)" >> "$RES"
}

# fls_key NAME: the access key NAME's requests are signed with: its own
# in moto (the proxy's log tells whose each request is), s3s-fs's one.
fls_key() { if [ "$FLEET_SERVER" = s3s-fs ]; then echo novelfs-bench; else echo "fls-$1"; fi; }

fls_mount() { # fls_mount NAME: a fresh mount at $WORK/fls-NAME
    rm -rf "$WORK/fls-idx-$1"
    AWS_ACCESS_KEY_ID=$(fls_key "$1") NO_DPID=1 mount_lib "s3://$BUCKET_NAME" "$WORK/fls-$1" \
        --endpoint-url "$EP" --index-dir "$WORK/fls-idx-$1"
}

# fls_publish: the one-shot publisher, its stderr in $WORK/fls-publish.err.
fls_publish() {
    AWS_ACCESS_KEY_ID=$(fls_key publisher) "$BIN" index "s3://$BUCKET_NAME" --endpoint-url "$EP" \
        --index-dir "$WORK/fls-idx-publisher" --publish "$@" > /dev/null 2> "$WORK/fls-publish.err" ||
        { cat "$WORK/fls-publish.err" >&2; echo "bench.sh: novelfs index --publish failed" >&2; exit 1; }
}

# fls_until_shown MNT PAGE: reads PAGE on MNT until it holds the mark (at
# most 60 s); prints the seconds it took.
fls_until_shown() {
    local t0=$EPOCHREALTIME
    for _ in $(seq 600); do
        grep -q "$FLS_MARK" "$1/$2" 2>/dev/null && { elapsed "$t0" "$EPOCHREALTIME"; return; }
        sleep 0.1
    done
    echo -1
}

# fls_every_rounds: the publisher `--every 1` while nothing changes, until
# it has said `unchanged` three times; one flspub line with its counts.
fls_every_rounds() {
    local pid rounds
    AWS_ACCESS_KEY_ID=$(fls_key publisher) "$BIN" index "s3://$BUCKET_NAME" --endpoint-url "$EP" \
        --index-dir "$WORK/fls-idx-publisher" --publish --every 1 > /dev/null 2> "$WORK/fls-every.err" &
    pid=$!
    for _ in $(seq 6000); do
        grep -q 'published at' "$WORK/fls-every.err" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    proxy_ctl reset
    for _ in $(seq 6000); do
        [ "$(grep -c 'unchanged' "$WORK/fls-every.err")" -ge 3 ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rounds=$(grep -c 'unchanged' "$WORK/fls-every.err" || true)
    printf 'flspub\t%s\t%s\t%s\n' "$rounds" "$(fls_counts | tr ' ' '\t')" "$(load1)" >> "$RES"
}

# fls_s3s_fs BIN DATA: s3s-fs serving the folder DATA (a bucket a
# sub-folder) on 127.0.0.1, the proxy in front; sets PROXY_PORT, EP.
fls_s3s_fs() {
    local port i
    port=$(free_port)
    "$1" --host 127.0.0.1 --port "$port" --access-key novelfs-bench --secret-key novelfs-bench-secret "$2" \
        > "$WORK/s3s-fs.log" 2>&1 &
    BK_SERVER_PIDS+=($!)
    python3 "$REPO/tests/s3/proxy.py" --upstream-port "$port" > "$WORK/proxy.out" 2> "$WORK/proxy.log" &
    BK_SERVER_PIDS+=($!)
    for i in $(seq 100); do grep -q '^PORT ' "$WORK/proxy.out" && break; sleep 0.1; done
    PROXY_PORT=$(sed -n 's/^PORT //p' "$WORK/proxy.out")
    [ -n "$PROXY_PORT" ] || { echo "bench.sh: proxy.py did not start: $(cat "$WORK/proxy.log")" >&2; exit 1; }
    EP=http://127.0.0.1:$PROXY_PORT
}

fleetscale_figures() {
    local books=$((CHAPTERS / 100)) book key file page t0 secs i n keys other pid pids=() psecs rate lrate
    [ "$books" -ge 2 ] || { echo "bench.sh: --fleet --chapters takes at least 200 chapters" >&2; exit 2; }
    local s3s=${NOVELFS_S3S_FS:-$HOME/.cache/novelfs/s3s-fs/bin/s3s-fs}
    if [ "$FLEET_SERVER" = s3s-fs ] && [ ! -x "$s3s" ]; then
        echo "note: s3s-fs is not installed ($s3s; cargo install s3s-fs --version 0.14.1 --locked --root ~/.cache/novelfs/s3s-fs): the fleet at scale is skipped"
        echo "note	fleet at scale: skipped, s3s-fs is not installed ($s3s)" >> "$RES"
        return 0
    fi
    echo "== fleet at scale: $books books x 100 chapters in $FLEET_SERVER, 20 ms a request"
    BUCKET_NAME=novelfs-fleet
    FROOT=$WORK/fleet-lib
    [ "$FLEET_SERVER" = moto ] || FROOT=$WORK/s3s-data/$BUCKET_NAME
    $LIB gen-scale "$FROOT" --books "$books" --chapters 100 --seed "$SEED"
    find "$FROOT/novels" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort > "$WORK/fleet-books.txt"
    book=$(sed -n "$((books / 2 + 1))p" "$WORK/fleet-books.txt")
    other=$(sed -n "$((books / 4 + 1))p" "$WORK/fleet-books.txt")
    if [ "$FLEET_SERVER" = moto ]; then
        bucket_servers
        echo "== put $CHAPTERS chapters to moto"
        read -r keys _ psecs _ < <($LIB s3-put "$FROOT" "$MOTO_PORT" "$BUCKET_NAME" --jobs 8)
        rate=$($LIB s3-rate "$PROXY_PORT" "$BUCKET_NAME" "$FROOT" 2000 --jobs 16)
        read -r _ _ lrate < <($LIB s3-list-rate "$PROXY_PORT" "$BUCKET_NAME" "$FROOT" --jobs 16)
        echo "note	fleet at scale: $keys objects put to moto in $psecs s; moto's own rate straight through the proxy at 0 ms, 16 clients: $rate GETs/s, $lrate LISTs/s (load $(load1))" >> "$RES"
    else
        # The folder is the bucket: nothing is uploaded. Its listings give
        # no ETag (the publisher and the mounts then tell an object by its
        # size and time).
        rm -f "$FROOT/bench-meta"
        keys=$CHAPTERS rate=0 lrate=0
        fls_s3s_fs "$s3s" "$WORK/s3s-data"
    fi
    printf 'flsinfo\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$books" "$keys" "$rate" "$lrate" "$FLEET_MOUNTS" \
        "$FLEET_PERIOD" "$FLEET_DURATION" "$FLEET_SERVER" >> "$RES"
    export AWS_SECRET_ACCESS_KEY=novelfs-bench-secret AWS_REGION=us-east-1
    export AWS_ACCESS_KEY_ID=novelfs-bench
    TRANSPORT=classic
    proxy_ctl "set?latency_ms=20"

    echo "== publisher: first run, then rounds with nothing changed"
    proxy_ctl reset
    t0=$EPOCHREALTIME
    fls_publish
    fls_record publisher-first "$(elapsed "$t0" "$EPOCHREALTIME")"
    fls_every_rounds
    # A head that promises no cadence is followed however long ago it was
    # published (the one above promised 1 s, and its publisher is gone).
    fls_publish

    echo "== fresh mounts: first page, novel_books.txt"
    page="$book/37/offset-1.txt"
    proxy_ctl reset
    t0=$EPOCHREALTIME
    fls_mount first
    cat "$WORK/fls-first/$page" > /dev/null
    fls_record fresh-first-page "$(elapsed "$t0" "$EPOCHREALTIME")"
    alive "$WORK/fls-first"
    unmount_fs "$WORK/fls-first"
    fls_mount books
    proxy_ctl reset
    t0=$EPOCHREALTIME
    cat "$WORK/fls-books/novel_books.txt" > /dev/null
    fls_record fresh-books "$(elapsed "$t0" "$EPOCHREALTIME")"
    alive "$WORK/fls-books"
    unmount_fs "$WORK/fls-books"

    echo "== 16 fresh mounts at once"
    proxy_ctl reset
    for i in $(seq 16); do
        mkdir -p "$WORK/fls-m$i"
        rm -rf "$WORK/fls-idx-m$i"
        MOUNTED+=("$WORK/fls-m$i")
        page="$(sed -n "$(( (i * 7) % books + 1 ))p" "$WORK/fleet-books.txt")/$(( (i * 13) % 100 + 1 ))/offset-1.txt"
        (
            t0=$EPOCHREALTIME
            AWS_ACCESS_KEY_ID=$(fls_key "m$i") "$BIN" mount "s3://$BUCKET_NAME" "$WORK/fls-m$i" --io-uring off \
                --endpoint-url "$EP" --index-dir "$WORK/fls-idx-m$i" &&
                cat "$WORK/fls-m$i/$page" > /dev/null &&
                echo "$(elapsed "$t0" "$EPOCHREALTIME")" > "$WORK/fls-m$i.secs"
        ) &
        pids+=($!)
    done
    # Only these: moto and the proxy are children of this shell too.
    wait "${pids[@]}"
    secs=$(cat "$WORK"/fls-m*.secs | sort -n | tail -n1)
    n=$(cat "$WORK"/fls-m*.secs | wc -l)
    fls_record sixteen "$secs"
    printf 'flssixteen\t%s\t%s\n' "$n" "$(sort -n "$WORK"/fls-m*.secs | tr '\n' ' ')" >> "$RES"
    for i in $(seq 16); do alive "$WORK/fls-m$i"; unmount_fs "$WORK/fls-m$i"; done

    echo "== one chapter replaced and published"
    fls_mount read
    fls_mount unread
    cat "$WORK/fls-read/$book/novel_chapters.txt" "$WORK/fls-read/$book/50/offset-1.txt" > /dev/null
    cat "$WORK/fls-unread/novel_books.txt" "$WORK/fls-unread/$other/3/offset-1.txt" > /dev/null
    file=$(find "$FROOT/novels/$book" -maxdepth 1 -type f -printf '%f\n' | sort | sed -n 50p)
    key="novels/$book/$file"
    printf '\n%s\n' "$FLS_MARK" >> "$FROOT/$key"
    [ "$FLEET_SERVER" != moto ] || $FLS_PY put "$MOTO_PORT" "$BUCKET_NAME" "$key" "$FROOT/$key"
    proxy_ctl reset
    t0=$EPOCHREALTIME
    fls_publish
    fls_record replaced-publish "$(elapsed "$t0" "$EPOCHREALTIME")"
    proxy_ctl reset
    secs=$(fls_until_shown "$WORK/fls-read" "$book/50/offset-1.txt")
    fls_record replaced-read-book "$secs"
    proxy_ctl reset
    secs=$(fls_until_shown "$WORK/fls-unread" "$book/50/offset-1.txt")
    fls_record replaced-other-book "$secs"
    alive "$WORK/fls-read"
    alive "$WORK/fls-unread"
    unmount_fs "$WORK/fls-read"
    unmount_fs "$WORK/fls-unread"

    echo "== agent rounds: $FLEET_MOUNTS fresh mounts, a round every $FLEET_PERIOD s for $FLEET_DURATION s, publisher --every 300"
    AWS_ACCESS_KEY_ID=$(fls_key publisher) "$BIN" index "s3://$BUCKET_NAME" --endpoint-url "$EP" \
        --index-dir "$WORK/fls-idx-publisher" --publish --every 300 > /dev/null 2> "$WORK/fls-every300.err" &
    pid=$!
    for _ in $(seq 6000); do
        grep -q 'published at' "$WORK/fls-every300.err" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    FLEET_MNTS=()
    for i in $(seq 0 $((FLEET_MOUNTS - 1))); do fls_mount "r$i"; FLEET_MNTS+=("$WORK/fls-r$i"); done
    proxy_ctl reset
    t0=$EPOCHREALTIME
    $FLEET_PY rounds "$BIN" "$WORK/fleet-books.txt" 100 "$FLEET_PERIOD" "$FLEET_DURATION" "$SEED" \
        "${FLEET_MNTS[@]}" > "$WORK/fls-rounds.out" 2> "$WORK/fls-rounds.err" ||
        { cat "$WORK/fls-rounds.err" >&2; echo "bench.sh: the fleet's rounds failed" >&2; exit 1; }
    secs=$(elapsed "$t0" "$EPOCHREALTIME")
    fls_record rounds "$secs"
    printf 'flsrounds\t%s\t%s\n' "$(awk '{ r += $2; f += $10 } END { print r "\t" f }' "$WORK/fls-rounds.out")" \
        "$($FLS_PY classify "$PROXY_PORT" | tr ' ' '\t')" >> "$RES"
    [ ! -s "$WORK/fls-rounds.err" ] ||
        echo "note	fleet at scale, rounds: reads failed: $(head -c 300 "$WORK/fls-rounds.err" | tr '\n\t' '  ')" >> "$RES"
    for i in "${FLEET_MNTS[@]}"; do alive "$i"; done
    fleet_unmount_all
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true

    proxy_ctl "set?latency_ms=0"
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
    bucket_cleanup
}
