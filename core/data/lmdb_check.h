// LMDB maps its file and trusts every page number and offset in it: a damaged page (a flipped
// bit on disk, a bad copy) sends a cursor past the file's end (SIGBUS), past the map (SIGSEGV)
// or into one of LMDB's assertions (abort). Heavily damaged copies of a small database did all
// three in 22 of 300 trials. So before a reader's first cursor, the main database's tree is
// walked here with ordinary reads, and every page number, offset and size LMDB would follow
// is checked against the page and the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem {

// Empty when both meta pages of `file` state one page size (a power of two, 512 bytes to 64 KB)
// that the file holds, or when either is no meta page at all (LMDB refuses that file itself);
// otherwise what is wrong. Before LMDB opens the file:
// it places its second meta page by the page size the newer meta page states, through the map.
std::string lmdb_meta_problem(const std::string& file);

// Empty when the main database's tree in `file` (LMDB's on-disk format, pages of `page_size`
// bytes, the meta page of transaction `txnid`) holds together: branch pages down to leaves at
// the depth the meta page states, each page's node offsets and sizes within it, each child and
// overflow page within the file, no page reached twice, and as many records as the meta page
// counts. Otherwise what is wrong, for a user ("page 7, a leaf: node 3: its data runs past the
// page"). Reads the branch and leaf pages once (small records lie in the leaves), not the
// overflow pages of large records' data.
std::string lmdb_tree_problem(const std::string& file, std::size_t page_size, std::uint64_t txnid);

}  // namespace tandem
