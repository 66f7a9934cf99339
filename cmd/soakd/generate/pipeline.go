package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/schollz/progressbar/v3"

	"github.com/soakd/soakd/sinks/file"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// The data set is cut into chunks: a range of rounds over every device
// of the shard, or (when one round is large) one round over a range of
// devices. Worker p owns stream p of W, i.e. the shard's devices whose
// index j (d = shard.Index + j*shard.Count) has j mod W == p, and encodes
// its devices of each chunk into a piece, remembering where each device's
// rows end. The writer takes chunk k's pieces from every worker and
// emits, round by round, the devices in ascending order. A device's rows
// do not depend on W (see iot.Stream), so neither does the output; the
// chunk size only bounds memory: about pieceBytes per worker and piece,
// piecesPerWorker pieces each. A piece is allocated once at twice that
// (pages never written are never touched) and reused: growing it by
// appends cost a copy per doubling and fresh pages to fault in, 15 % of
// the CPU of generating devops at scale 100. Pieces of 256 KiB rather
// than 1 MiB are still in the cache when the writer reads them.
const (
	pieceBytes      = 256 << 10
	piecesPerWorker = 3
)

type generator struct {
	src       *iot.Source
	format    file.Format
	precision lineproto.Precision
	workers   int
	multi     bool // one output per table

	devices  int   // in the shard
	rounds   int64 // including the flush round
	roundsPC int64 // rounds per chunk (when whole rounds fit)
	devsPC   int   // devices per chunk (when a round does not)
	perRound int   // chunks per round
	chunks   int64
}

type chunk struct {
	r0, r1 int64 // rounds
	j0, j1 int   // device indexes in the shard
}

// piece is one worker's encoded share of a chunk.
type piece struct {
	bufs   [][]byte // per output
	devs   []uint32 // per device segment
	ends   []int    // per segment and output: end offset in bufs[output]
	rounds []int    // first segment of each round of the chunk, then len(devs)
	rows   int64
	values int64
	err    error
}

type stats struct{ rows, values, bytes int64 }

// estimate guesses the encoded bytes of one device's reading, for sizing
// chunks only.
func estimate(schemas []*sources.Schema) int {
	n := 0
	for _, s := range schemas {
		n += 40 + 14*len(s.TagKeys) + 10*len(s.Fields)
	}
	return n
}

func (g *generator) plan() {
	g.devices = g.src.Devices()
	g.rounds = g.src.Rounds()
	target := int64(pieceBytes) * int64(g.workers)
	perRound := int64(g.devices) * int64(estimate(g.src.Schemas()))
	if perRound <= target || g.devices <= g.workers {
		g.roundsPC = max(1, target/max(perRound, 1))
		g.chunks = (g.rounds + g.roundsPC - 1) / g.roundsPC
		return
	}
	g.devsPC = max(g.workers, int(target/int64(estimate(g.src.Schemas()))))
	g.perRound = (g.devices + g.devsPC - 1) / g.devsPC
	g.chunks = g.rounds * int64(g.perRound)
}

func (g *generator) chunk(k int64) chunk {
	if g.roundsPC > 0 {
		r0 := k * g.roundsPC
		return chunk{r0: r0, r1: min(g.rounds, r0+g.roundsPC), j0: 0, j1: g.devices}
	}
	r := k / int64(g.perRound)
	j0 := int(k%int64(g.perRound)) * g.devsPC
	return chunk{r0: r, r1: r + 1, j0: j0, j1: min(g.devices, j0+g.devsPC)}
}

// deviceID is the device number of shard index j.
func (g *generator) deviceID(j int) uint64 {
	sh := g.src.Shard()
	return uint64(sh.Index) + uint64(j)*uint64(sh.Count)
}

func (g *generator) run(ctx context.Context, outputs []*file.Output, bar *progressbar.ProgressBar) (stats, error) {
	g.plan()
	outs := make([]*gather, len(outputs))
	for o, out := range outputs {
		var err error
		if outs[o], err = newGather(out); err != nil {
			return stats{}, err
		}
	}
	w := g.workers
	free := make([]chan *piece, w)
	full := make([]chan *piece, w)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	for p := 0; p < w; p++ {
		st, err := g.src.OpenStream(p, w)
		if err != nil {
			return stats{}, err
		}
		free[p] = make(chan *piece, piecesPerWorker)
		full[p] = make(chan *piece, piecesPerWorker)
		for range piecesPerWorker {
			pc := &piece{bufs: make([][]byte, len(outs))}
			if len(outs) == 1 { // one per table: their shares are unknown, so they grow
				pc.bufs[0] = make([]byte, 0, 2*pieceBytes)
			}
			free[p] <- pc
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.work(st, free[p], full[p], done, len(outs))
		}()
	}
	var s stats
	pos := make([][]int, w)
	heads := make([]int, w)
	for p := range pos {
		pos[p] = make([]int, len(outs))
	}
	pcs := make([]*piece, w)
	for k := int64(0); k < g.chunks; k++ {
		ch := g.chunk(k)
		for p := 0; p < w; p++ {
			select {
			case pcs[p] = <-full[p]:
			case <-ctx.Done():
				return s, fmt.Errorf("interrupted: %w", ctx.Err())
			}
			if pcs[p].err != nil {
				return s, pcs[p].err
			}
			clear(pos[p])
		}
		var rows, values int64
		for ri := 0; ri < int(ch.r1-ch.r0); ri++ {
			for p := 0; p < w; p++ {
				heads[p] = pcs[p].rounds[ri]
			}
			for j := ch.j0; j < ch.j1; j++ {
				p := j % w
				pc, h := pcs[p], heads[p]
				if h == pc.rounds[ri+1] || uint64(pc.devs[h]) != g.deviceID(j) {
					continue // offline this round
				}
				for o, out := range outs {
					end := pc.ends[h*len(outs)+o]
					if end > pos[p][o] {
						out.add(pc.bufs[o][pos[p][o]:end])
						s.bytes += int64(end - pos[p][o])
						pos[p][o] = end
					}
				}
				heads[p]++
			}
		}
		for _, out := range outs { // before the pieces are reused
			if err := out.flush(); err != nil {
				return s, err
			}
		}
		for p := 0; p < w; p++ {
			if heads[p] != len(pcs[p].devs) {
				return s, fmt.Errorf("BUG: chunk %d: worker %d made %d device segments, %d written", k, p, len(pcs[p].devs), heads[p])
			}
			rows += pcs[p].rows
			values += pcs[p].values
			free[p] <- pcs[p]
		}
		s.rows += rows
		s.values += values
		if bar != nil {
			_ = bar.Add64(rows)
		}
	}
	return s, nil
}

// work fills and encodes this worker's share of every chunk in order.
func (g *generator) work(st *iot.Stream, free <-chan *piece, full chan<- *piece, done <-chan struct{}, nout int) {
	enc := file.NewEncoder(g.format, g.precision)
	b := sources.NewSeriesBatch(g.src.Schemas())
	var refs []iot.RowRef
	for k := int64(0); k < g.chunks; k++ {
		ch := g.chunk(k)
		var pc *piece
		select {
		case pc = <-free:
		case <-done:
			return
		}
		for o := range pc.bufs {
			pc.bufs[o] = pc.bufs[o][:0]
		}
		pc.devs, pc.ends, pc.rounds = pc.devs[:0], pc.ends[:0], pc.rounds[:0]
		pc.rows, pc.values, pc.err = 0, 0, nil
		until := uint64(math.MaxUint64)
		if ch.j1 < g.devices {
			until = g.deviceID(ch.j1)
		}
		for r := ch.r0; r < ch.r1 && pc.err == nil; r++ {
			if ch.j0 == 0 {
				if err := st.NextRound(); err != nil {
					pc.err = fmt.Errorf("BUG: round %d of %d: %w", r, g.rounds, err)
					break
				}
			}
			b.Reset()
			refs = st.FillUntil(b, until, refs[:0])
			pc.rounds = append(pc.rounds, len(pc.devs))
			cur := int64(-1)
			for _, ref := range refs {
				t := b.Tables[ref.Table]
				dev := g.src.Slot(t.Device[ref.Row]) // with CHURN, the devices of a slot follow one another
				if int64(dev) != cur {
					if cur >= 0 {
						for o := range nout {
							pc.ends = append(pc.ends, len(pc.bufs[o]))
						}
					}
					cur = int64(dev)
					pc.devs = append(pc.devs, dev)
				}
				o := 0
				if g.multi {
					o = int(ref.Table)
				}
				pc.bufs[o], _ = enc.AppendRow(pc.bufs[o], t, int(ref.Row))
			}
			if cur >= 0 {
				for o := range nout {
					pc.ends = append(pc.ends, len(pc.bufs[o]))
				}
			}
			pc.rows += int64(len(refs))
			pc.values += int64(b.NumValues)
		}
		pc.rounds = append(pc.rounds, len(pc.devs))
		select {
		case full <- pc:
		case <-done:
			return
		}
	}
}

// streamBatch is the rows per Fill of copyStream. It is part of the output
// format of such sources: a batch's rows are written table by table.
const streamBatch = 1000

// copyStream writes a finite series source that is not cut into rounds
// (not an iot source) from one stream, batch by batch; within a batch,
// each table's rows in order. The bytes depend only on the data set.
func (j *job) copyStream(ctx context.Context, outs []*file.Output, bar *progressbar.ProgressBar) (stats, error) {
	var s stats
	st, err := j.src.Stream(0, 1)
	if err != nil {
		return s, err
	}
	b := sources.NewSeriesBatch(j.src.Schemas())
	enc := file.NewEncoder(j.format, j.precision)
	var buf []byte
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return s, fmt.Errorf("interrupted: %w", err)
		}
		b.Reset()
		switch err := st.Fill(b, streamBatch, 0); {
		case errors.Is(err, sources.ErrDone):
			done = true
		case err != nil:
			return s, err
		}
		var rows int64
		for ti, t := range b.Tables {
			buf = buf[:0]
			for i := range t.Len() {
				buf, _ = enc.AppendRow(buf, t, i)
			}
			o := 0
			if j.multi {
				o = ti
			}
			n, _ := outs[o].W.Write(buf) // errors resurface on Flush
			s.bytes += int64(n)
			rows += int64(t.Len())
		}
		s.rows += rows
		s.values += int64(b.NumValues)
		if bar != nil {
			_ = bar.Add64(rows)
		}
	}
	return s, nil
}
