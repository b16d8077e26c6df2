// Releasing memory in which every object is dead: a chunk of the small
// heap whose frames are all retired, a block of the large region.
//
// A chunk whose frames are all retired. Every alias over it is
// dead or was never handed out, but its guard markers still hold page-table
// pages and its records memory: without this, memory would grow with every
// allocation ever made. A PROT_NONE mapping over the chunk's range in each
// window frees both and still faults; the reservation keeps the range from
// ever being mapped again. The sites of objects in a released chunk are
// forgotten; a use of one is still reported, without them.
#define _GNU_SOURCE
#include <sys/mman.h>

#include "internal.h"

// Each run of released chunks splits every window into two more VMAs:
// beyond this many runs, chunks are kept instead (the guarantee holds
// either way; only memory is at stake).
#define MAX_ISLANDS 16

// hg_chunk_unmap releases chunk's range in window w; 0 on success.
int hg_chunk_unmap(uint32_t chunk, unsigned w)
{
	char *at = hg.small + w * HG_FILE + (uintptr_t)chunk * HG_CHUNK_FRAMES * HG_PAGE;
	void *p = mmap(at, HG_CHUNK_FRAMES * HG_PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	return p == MAP_FAILED ? -1 : 0;
}

static int released(int64_t chunk)
{
	return chunk >= 0 && chunk < (int64_t)HG_CHUNKS && hg.chunks[chunk].released;
}

// hg_chunk_maybe_release releases chunk if no run in it is alive and no
// new run can start in it. The global lock is held.
void hg_chunk_maybe_release(uint32_t chunk)
{
	struct hg_chunk *c = &hg.chunks[chunk];
	if (c->released || c->runs == 0 || c->retired != c->runs ||
	    hg.frame_top < (chunk + 1) * HG_CHUNK_FRAMES)
		return;
	int left = released((int64_t)chunk - 1), right = released((int64_t)chunk + 1);
	int delta = 1 - left - right;
	if (hg.islands + delta > MAX_ISLANDS)
		return;
	unsigned windows = atomic_load(&hg.windows), w;
	for (w = 0; w < windows; w++)
		if (hg_chunk_unmap(chunk, w) != 0)
			break;	// out of mappings: what is done stays done
	if (w == 0)
		return;
	c->released = 1;
	hg.islands += delta;
	// The records go only if no alias over the chunk is left to report on.
	if (w == windows)
		hg_drop(hg_record_of(0, chunk * HG_CHUNK_FRAMES), HG_WINDOWS * HG_CHUNK_FRAMES * sizeof(struct hg_record));
}

// hg_block_maybe_release releases a block of the large region if no object
// is alive in it and none can be placed in it any more: its guard markers'
// page table and its records. The global lock is held.
void hg_block_maybe_release(uintptr_t block)
{
	if (atomic_load(&hg.large_live[block]) != 0 ||
	    (block + 1) * HG_LARGE_BLOCK > atomic_load(&hg.large_top))
		return;
	char *at = hg.large + block * HG_LARGE_BLOCK;
	if (mmap(at, HG_LARGE_BLOCK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
	    MAP_FAILED)
		return;	// out of mappings: the block keeps its guard markers
	hg_drop(&hg.large_rec[block * HG_LARGE_BLOCK / HG_PAGE], HG_LARGE_BLOCK / HG_PAGE * sizeof(struct hg_record));
	atomic_store(&hg.large_live[block], HG_BLOCK_RELEASED);
}

// hg_block_released tells whether addr lies in a released large block.
int hg_block_released(uintptr_t addr)
{
	return hg.large && hg_in_large(addr) &&
	       atomic_load(&hg.large_live[(addr - (uintptr_t)hg.large) / HG_LARGE_BLOCK]) == HG_BLOCK_RELEASED;
}
