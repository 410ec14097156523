#include "data/lmdb_check.h"

#include <fstream>
#include <unordered_set>
#include <vector>

namespace tandem {
namespace {

// LMDB's on-disk layout (lmdb 0.9, 64-bit): a page starts with its number (8 bytes), 2 bytes of
// padding, its flags, and the offsets where its free space begins and ends; node offsets follow.
// A node is its data size (or a branch's child page number) in two 16-bit halves, its flags
// (a branch's child's high bits), its key size, then the key and the data.
constexpr std::size_t kPageHeader = 16, kNodeHeader = 8;
constexpr std::uint16_t kBranch = 0x01, kLeaf = 0x02, kOverflow = 0x04, kMeta = 0x08, kLeaf2 = 0x20;
constexpr std::uint16_t kBigData = 0x01, kDupData = 0x04;  // a leaf node's flags
constexpr std::uint16_t kDupSort = 0x04;                   // a database's flags
// The meta page's fields, from the start of its page: the free list's and the main database's
// records (48 bytes each: padding, flags, depth, branch, leaf and overflow page counts, entries,
// root), the last page in use, the transaction.
constexpr std::size_t kMainDb = 88, kLastPage = 136, kTxnid = 144;
constexpr std::uint64_t kNoPage = ~std::uint64_t(0);

std::uint64_t little(const unsigned char* p, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

struct Walk {
    std::ifstream in;
    std::size_t page_size = 0;
    std::uint64_t pages = 0, last_page = 0, entries = 0;
    std::vector<unsigned char> page;

    bool read_page(std::uint64_t number) {
        page.assign(page_size, 0);
        in.seekg(static_cast<std::streamoff>(number * page_size));
        in.read(reinterpret_cast<char*>(page.data()), static_cast<std::streamsize>(page_size));
        return bool(in);
    }
    std::uint64_t at(std::size_t offset, int n) const { return little(page.data() + offset, n); }
};

std::string describe(std::uint64_t number, std::uint16_t kind) {
    return "page " + std::to_string(number) + (kind == kBranch ? ", a branch" : ", a leaf");
}

// The problems of one page of the tree; its children go on `stack`.
std::string page_problem(Walk& w, std::uint64_t number, int level, int depth,
                         std::vector<std::pair<std::uint64_t, int>>& stack) {
    const std::uint16_t kind = level + 1 < depth ? kBranch : kLeaf;
    const std::string where = describe(number, kind);
    if (number < 2) return "its tree names page " + std::to_string(number) + ", a meta page";
    if (number > w.last_page || number >= w.pages)
        return "a page number (" + std::to_string(number) + ") past the " +
               std::to_string(std::min(w.last_page + 1, w.pages)) + " pages the file holds";
    if (!w.read_page(number)) return where + ": cannot be read";
    const auto flags = static_cast<std::uint16_t>(w.at(10, 2));
    if (w.at(0, 8) != number)
        return where + ": it holds the number of page " + std::to_string(w.at(0, 8));
    if ((flags & (kBranch | kLeaf | kOverflow | kMeta | kLeaf2)) != kind)
        return where + " at depth " + std::to_string(level + 1) + " of " + std::to_string(depth) +
               ": its flags (" + std::to_string(flags) + ") say otherwise";
    const std::size_t lower = w.at(12, 2), upper = w.at(14, 2);
    if (lower < kPageHeader || lower > upper || upper > w.page_size || (lower - kPageHeader) % 2)
        return where + ": its free space (" + std::to_string(lower) + " to " +
               std::to_string(upper) + ") is not within the page";
    const std::size_t nodes = (lower - kPageHeader) / 2;
    if (kind == kBranch && nodes == 0) return where + ": it has no children";
    for (std::size_t i = 0; i < nodes; ++i) {
        const std::string node = where + ": node " + std::to_string(i);
        const std::size_t offset = w.at(kPageHeader + 2 * i, 2);
        if (offset < upper || offset + kNodeHeader > w.page_size)
            return node + " starts outside the page's nodes (at " + std::to_string(offset) + ")";
        const std::uint64_t low = w.at(offset, 2), high = w.at(offset + 2, 2);
        const auto node_flags = static_cast<std::uint16_t>(w.at(offset + 4, 2));
        const std::size_t key_end = offset + kNodeHeader + w.at(offset + 6, 2);
        if (key_end > w.page_size) return node + ": its key runs past the page";
        if (kind == kBranch) {
            stack.emplace_back(low | high << 16 | std::uint64_t(node_flags) << 32, level + 1);
            continue;
        }
        ++w.entries;
        const std::uint64_t size = low | high << 16;
        if (node_flags & kDupData)
            return node + ": duplicate keys, which the database is not made for";
        if (!(node_flags & kBigData)) {
            if (key_end + size > w.page_size) return node + ": its data runs past the page";
            continue;
        }
        if (key_end + 8 > w.page_size) return node + ": its data's page number runs past the page";
        const std::uint64_t first = w.at(key_end, 8);
        const std::uint64_t span = (kPageHeader + size + w.page_size - 1) / w.page_size;
        if (first < 2 || first > w.last_page || first + span > std::min(w.last_page + 1, w.pages))
            return node + ": its " + std::to_string(size) + " bytes of data on pages " +
                   std::to_string(first) + "-" + std::to_string(first + span - 1) +
                   " run past the file";
    }
    return {};
}

}  // namespace

std::string lmdb_meta_problem(const std::string& file) {
    constexpr std::size_t kMagic = 16, kPageSize = 40;  // the free list's padding holds it
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in) return {};  // LMDB says what is wrong with a file it cannot open
    const auto size = static_cast<std::uint64_t>(in.tellg());
    if (size == 0) return {};
    std::uint64_t page_size = 0;
    for (int m = 0; m < 2; ++m) {
        unsigned char head[kPageSize + 4] = {};
        in.seekg(static_cast<std::streamoff>(m * page_size));
        in.read(reinterpret_cast<char*>(head), sizeof head);
        // Not a meta page at all: LMDB refuses the file itself, in plainer words ("it is not an
        // LMDB database").
        if (!in || little(head + kMagic, 4) != 0xBEEFC0DE || !(little(head + 10, 2) & kMeta))
            return {};
        const std::uint64_t stated = little(head + kPageSize, 4);
        if (m == 0) {
            if (stated < 512 || stated > 65536 || (stated & (stated - 1)) != 0)
                return "its page size (" + std::to_string(stated) + ") is impossible";
            if (size < 2 * stated) return "it is shorter than its two meta pages";
            page_size = stated;
        } else if (stated != page_size) {
            return "its meta pages state two page sizes (" + std::to_string(page_size) + " and " +
                   std::to_string(stated) + ")";
        }
    }
    return {};
}

std::string lmdb_tree_problem(const std::string& file, std::size_t page_size, std::uint64_t txnid) {
    Walk w;
    w.in.open(file, std::ios::binary | std::ios::ate);
    if (!w.in || page_size < 512) return {};  // LMDB itself opened it; nothing to walk
    w.page_size = page_size;
    w.pages = static_cast<std::uint64_t>(w.in.tellg()) / page_size;
    // The meta page LMDB reads from, chosen as it chooses (mdb_env_pick_meta): the later
    // transaction's, page 0 on a tie. Checking first whichever named LMDB's transaction walked
    // page 1's tree where two pages named the same one, and LMDB followed page 0's (its fuzzer's
    // find: a root on a meta page, and an assertion that ends the process).
    std::vector<unsigned char> metas[2];
    std::uint64_t transaction[2] = {};
    for (int m = 0; m < 2; ++m) {
        if (!w.read_page(static_cast<std::uint64_t>(m)))
            return "meta page " + std::to_string(m) + " cannot be read";
        transaction[m] = w.at(kTxnid, 8);
        metas[m].swap(w.page);
    }
    const int meta = transaction[0] < transaction[1] ? 1 : 0;
    if (transaction[meta] != txnid)
        return "its meta pages name transactions " + std::to_string(transaction[0]) + " and " +
               std::to_string(transaction[1]) + ", LMDB read " + std::to_string(txnid);
    w.page.swap(metas[meta]);
    const auto db_flags = static_cast<std::uint16_t>(w.at(kMainDb + 4, 2));
    const int depth = static_cast<int>(w.at(kMainDb + 6, 2));
    const std::uint64_t expected = w.at(kMainDb + 32, 8), root = w.at(kMainDb + 40, 8);
    w.last_page = w.at(kLastPage, 8);
    if (db_flags & kDupSort)
        return "its main database holds duplicate keys (not an image database)";
    if (root == kNoPage)
        return expected == 0 ? std::string()
                             : "it counts " + std::to_string(expected) + " records but has none";
    if (depth < 1 || depth > 64)
        return "its tree's depth (" + std::to_string(depth) + ") is impossible";
    std::vector<std::pair<std::uint64_t, int>> stack{{root, 0}};
    std::unordered_set<std::uint64_t> seen;
    while (!stack.empty()) {
        const auto [number, level] = stack.back();
        stack.pop_back();
        if (!seen.insert(number).second)
            return "page " + std::to_string(number) + " is reached twice";
        if (std::string why = page_problem(w, number, level, depth, stack); !why.empty())
            return why;
    }
    if (w.entries != expected)
        return "it counts " + std::to_string(expected) + " records but its pages hold " +
               std::to_string(w.entries);
    return {};
}

}  // namespace tandem
