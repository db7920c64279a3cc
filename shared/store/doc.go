// Package store is agentsfleet's state: fleets and their Definition
// revisions, runs with their leases, checkpoints, event logs, budgets,
// message lines and child agents, schedules, and idempotency keys. It keeps
// all of it in one Amazon DynamoDB table (single-table design, on-demand
// billing, TTL), through the small API interface that *dynamodb.Client
// satisfies. A Store is safe for concurrent use by many goroutines and
// processes.
//
// # Guarantees
//
// Every limit of the specification is enforced by DynamoDB itself, with a
// conditional write or a TransactWriteItems whose conditions read a counter
// on the owning item, so that no number of concurrent callers, in one
// process or many, can exceed it:
//
//	limit                               counter (item)                     enforced by
//	32 schedules a fleet                schedTotal (fleet)                 tx: update fleet if < 32 + put schedule
//	16 of them created by the fleet     schedFleet (fleet)                 same transaction, if < 16
//	8 message lines a run               msgLines (run)                     update if < 8 and the run has a thread
//	4 children working, 16 in all       kidsRun, kidsTotal (run)           tx: update run + put child (+ parent running)
//	a run's budget (tokens, tool calls) tokLeft, callLeft (run)            update "left -= n" if left ≥ n
//	one runner at a time                leaseHolder, leaseUntil (run)      update if free, expired or own
//	a committed step never re-runs      ckptStep (run)                     tx: update run if holder and step > last
//	event numbers 1, 2, 3… without gaps evtSeq (run)                       tx: update run if seq = read + put events
//	revision numbers 1, 2, 3…           rev (fleet)                        tx: update fleet if rev = read + put revision
//	a proposal applies to its revision  rev (fleet), status (chat)         tx: update fleet if rev = from + chat if proposed, same hash + put revision
//	one turn of a chat at a time        status, turn (chat)                update if status not thinking and turn = read
//	one run per idempotency key         the key item                       tx: put key if absent or expired + put run
//	one run per pooled sandbox          state, claimedBy (sandbox)         update if state = idle and expiresAt > now
//	legal status moves only             status (run)                       update if status IN (allowed sources)
//
// Where a condition fails, the Store asks DynamoDB for the item as it was
// (ReturnValuesOnConditionCheckFailure ALL_OLD, on single writes and in
// transactions' CancellationReasons) to say which condition failed and
// return the product code from package fault (fault.SchedFleetCap,
// fault.RunMessageCap, …), wrapped with context and matched with errors.Is.
// Endpoints that send no item get a consistent read instead; where that
// read shows the condition passing after all, the write is retried. A
// transaction cancelled only by TransactionConflict is retried too. Errors
// that are not product codes (DynamoDB's own, ErrStepCommitted, ErrRunEnded,
// ErrChildEnded, ErrTooLarge, ErrContention) are never turned into one.
//
// # Table
//
// Keys are strings: pk (partition), sk (sort). The global secondary index
// gsi1 (gsi1pk, gsi1sk), projects only the attributes list pages show
// (GSI1Attributes, INCLUDE), so the hot counters on the run item never cause
// index writes. The sparse gsi2 (gsi2pk S, gsi2sk N; KEYS_ONLY) holds only
// what is under way — queued and running runs, running children — by the
// moment from which nobody executes each (lapse.go), for the sweep that
// re-invokes what a dead invocation left (ListLapsed); only lease writes
// move it, one index write a renewal. TTL is on expiresAt (Unix seconds).
// The CDK stack and the LocalStack hook build the table from AttrPK,
// AttrSK, AttrGSI1PK, AttrGSI1SK, IndexGSI1, GSI1Attributes, AttrGSI2PK,
// AttrGSI2SK, IndexGSI2 and AttrTTL, or from CreateTableInput; CreateTable
// makes it for local use.
//
//	item                pk                   sk                    gsi1pk         gsi1sk         notes
//	fleet               FLEET#<name>         FLEET                 FLEETS         FLEET#<name>   paused, rev, hash, schedule counters
//	Definition revision FLEET#<name>         REV#<%010d rev>       -              -              canonical JSON + hash, who/from where/chat (by, via, improvement, restored), immutable
//	schedule            FLEET#<name>         SCHED#<id>            -              -              source, state, expr, tz, message
//	run                 RUN#<id>             RUN                   FLEET#<name>   RUN#<id>       status, pinned rev, counters, lease; gsi2 while queued or running
//	run input           RUN#<id>             INPUT                 -              -              what started the run
//	checkpoint          RUN#<id>             CKPT                  -              -              latest only: step + blob
//	child checkpoint    RUN#<id>             CKPT#<child id>       -              -              the same, of a child agent
//	turn                RUN#<id>             TURN#<agent>#<%016d>  -              -              messages a step added (agent: a child id, "" for the run's)
//	event               RUN#<id>             EVT#<%016d seq>       -              -              type, JSON body, time
//	child agent         RUN#<id>             CHILD#<id>            -              -              parent, depth, task, status, lease; gsi2 while running
//	idempotency key     IDEM#<scope>#<key>   IDEM                  -              -              run id, expiresAt (TTL)
//	pooled sandbox      POOL#<kind>          SBX#<id>              -              -              url, nonce, started, state idle|claimed, claimedBy, expiresAt (TTL)
//	webhook secret      FLEET#<name>         WEBHOOK               -              -              the secret itself (an HMAC key), createdAt
//	API key             KEYS                 KEY#<id>              -              -              name, scopes, SHA-256 of the secret, lastUsedAt, revoked
//	Slack channel route SLACK#<channel>      ROUTE                 -              -              the fleet the channel's mentions reach, updatedAt
//	Slack thread        SLACK#<channel>      THREAD#<thread ts>    -              -              the thread's newest run id and its fleet, updatedAt
//	improvement chat    IMPROVE#<id>         IMPROVE               -              -              fleet, status, turn, origin, Slack thread, latest proposal (from rev, TOML, hash, diff)
//	improvement log     IMPROVE#<id>         LOG                   -              -              the chat's messages and its agent's conversation (two blobs)
//	egress entry        EGR#<run id>         E#<µs time><n><rand>  -              -              one outbound request of the run (egress.go)
//	egress summary      EGR#<run id>         SUM                   -              -              requests, refused, bytesIn, bytesOut
//
// Access patterns:
//
//	get fleet / run / schedule / revision / checkpoint / child    GetItem (consistent)
//	list fleets by name                                          Query gsi1 pk=FLEETS
//	list a fleet's runs, newest first, paged                     Query gsi1 pk=FLEET#<name>, sk begins_with RUN#, descending
//	list a fleet's schedules (≤ 32)                              Query pk=FLEET#<name>, sk begins_with SCHED#
//	list a run's events from a sequence number, paged            Query pk=RUN#<id>, sk BETWEEN EVT#<from> AND EVT#<max>
//	list a run's children (≤ 16)                                 Query pk=RUN#<id>, sk begins_with CHILD#
//	list a run's egress log, oldest first, paged                 Query pk=EGR#<id>, sk begins_with E#
//	read an agent's conversation (ListTurns)                     Query pk=RUN#<id>, sk BETWEEN TURN#<agent>#<from> AND TURN#<agent>#<to>
//	list a kind's pooled sandboxes (idle: filter state, TTL)     Query pk=POOL#<kind>, sk begins_with SBX#
//	list API keys (oldest first, without hashes)                 Query pk=KEYS, sk begins_with KEY#
//	list a fleet's revisions, newest first, paged                Query pk=FLEET#<name>, sk begins_with REV#, descending
//	runs and children nobody executes since T (ListLapsed)       Query gsi2 pk=LIVE, sk <= T, ascending; GetItem each
//
// A pool's <kind> is a sandbox size ("small"), or a size and "+browser"
// ("small+browser") for sandboxes of the image with a browser: a run that
// needs one never claims the other.
//
// Run ids (and child and schedule ids) are 26 Crockford base32 characters,
// time first, like ULIDs, so gsi1sk sorts runs by creation. Page cursors are
// opaque (base64 of the last key) and refused when they name another
// partition. Lists read through gsi1 are eventually consistent; everything
// else reads strongly.
//
// Run inputs, checkpoints and Definitions live in items of their own so
// that the run item, which every step updates, stays small: about 490 bytes
// with a Slack thread and a lease, under the 1 KB that one write unit pays
// for. An agent's conversation is kept as turn items (turn.go), one for
// each step that added to it, so that a step writes what it adds and its
// checkpoint stays small however long the conversation grows. DynamoDB
// items are at most 400 KB; the Store refuses blobs over MaxBlobBytes
// (ErrTooLarge; fault.DefinitionInvalid for a Definition), and a step
// larger than a transaction holds. What is larger (a turn with a large
// output) the runner keeps in S3, with a pointer in the item.
//
// # Write units per tool call
//
// DynamoDB charges a write 1 unit per KB of the item started (an update:
// of the larger of the item before and after), and a transaction twice
// that. TestWriteUnitsPerToolCall measures the item sizes of a real step
// (run item 490 B, a 300-byte event body in a 402 B item, checkpoint item
// 679 B for a 600-byte checkpoint) and counts:
//
//	AppendEvent    tx: run update (1) + event put (1)        × 2 = 4
//	SaveCheckpoint tx: run update (1) + checkpoint put (1)   × 2 = 4
//	Spend          run update                                    = 1
//	separate calls                                                 9 units
//	CommitStep     tx: run (1) + event (1) + checkpoint (1)  × 2 = 6 units
//
// With an 8 KB checkpoint the figures are 25 and 22 units: the checkpoint
// dominates, so the runner checkpoints the step's delta (a turn item of a
// few hundred bytes, 2 units more) and a small state, not the whole
// conversation every step. The write path reads nothing once the Store has seen the
// run's event counter (it caches the last number it saw per run and learns
// the current one from a failed condition). gsi1 is not written on this path
// because no projected attribute changes. A condition that fails still
// costs the write units of the item. CapacityMeter adds up what DynamoDB
// reports, for production metrics; moto's reports are not usable (below).
//
// # Emulator notes (moto 5.2)
//
//   - moto must be served single-threaded (localstack/moto_server.py):
//     threaded, two conditional writes can both pass. The concurrency tests
//     here depend on that; against real DynamoDB the same code holds.
//   - ReturnValuesOnConditionCheckFailure works in moto for single writes and
//     in CancellationReasons; the fallback read is there for endpoints
//     without it.
//   - ReturnConsumedCapacity: moto reports a fixed 1.0 for PutItem, 0.5 for
//     UpdateItem (whatever the size) and nothing for TransactWriteItems, so
//     write units are computed from item sizes instead.
//   - moto never deletes expired TTL items. The Store does not rely on TTL
//     deletion: an expired idempotency key is treated as free by the
//     condition itself (expiresAt ≤ now).
//   - moto deep-copies a table for every transaction, so its transaction
//     latency grows with the table; benchmark ratios against moto measure the
//     emulator as much as the Store.
//   - moto raises no TransactionConflict (it is single-threaded), so the
//     conflict retry runs only against DynamoDB.
//   - moto's UpdateItem with UPDATED_NEW returns only attributes whose
//     value changed; the Store asks for ALL_NEW where it reads counters back.
package store
