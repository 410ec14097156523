#include "base/json.h"

#include <charconv>
#include <unordered_set>

namespace tandem {
namespace {

// Deep nesting is never legitimate in our files; a limit keeps a hostile header from
// exhausting the stack.
constexpr int kMaxDepth = 64;

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    JsonValue parse_document() {
        skip_space();
        JsonValue v = value(0);
        skip_space();
        if (pos_ != text_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw JsonError(what, pos_); }

    [[noreturn]] void fail_at_char(const std::string& expected) const {
        if (pos_ >= text_.size()) fail("unexpected end of text, expected " + expected);
        const unsigned char c = static_cast<unsigned char>(text_[pos_]);
        std::string shown = c >= 0x20 && c < 0x7f ? std::string("'") + char(c) + "'"
                                                  : "byte " + std::to_string(int(c));
        fail("unexpected " + shown + ", expected " + expected);
    }

    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }

    bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

    void expect(char c) {
        if (!peek(c)) fail_at_char(std::string("'") + c + "'");
        ++pos_;
    }

    JsonValue value(int depth) {
        if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
        JsonValue v;
        v.offset = pos_;
        if (peek('{')) {
            v.kind = JsonValue::Kind::object;
            parse_object(v, depth);
        } else if (peek('[')) {
            v.kind = JsonValue::Kind::array;
            parse_array(v, depth);
        } else if (peek('"')) {
            v.kind = JsonValue::Kind::string;
            v.string = parse_string();
        } else if (peek('-') || (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')) {
            parse_number(v);
        } else if (literal("true")) {
            v.kind = JsonValue::Kind::boolean;
            v.boolean = true;
        } else if (literal("false")) {
            v.kind = JsonValue::Kind::boolean;
        } else if (literal("null")) {
            v.kind = JsonValue::Kind::null;
        } else {
            fail_at_char("a JSON value");
        }
        return v;
    }

    void parse_object(JsonValue& v, int depth) {
        expect('{');
        skip_space();
        if (peek('}')) {
            ++pos_;
            return;
        }
        std::unordered_set<std::string> keys;
        for (;;) {
            skip_space();
            const std::size_t key_at = pos_;
            if (!peek('"')) fail_at_char("a string key");
            std::string key = parse_string();
            if (!keys.insert(key).second) {
                pos_ = key_at;
                fail("duplicate key \"" + key + "\"");
            }
            skip_space();
            expect(':');
            skip_space();
            v.object.push_back(JsonMember{std::move(key), value(depth + 1)});
            skip_space();
            if (peek(',')) {
                ++pos_;
                continue;
            }
            if (peek('}')) {
                ++pos_;
                return;
            }
            fail_at_char("',' or '}'");
        }
    }

    void parse_array(JsonValue& v, int depth) {
        expect('[');
        skip_space();
        if (peek(']')) {
            ++pos_;
            return;
        }
        for (;;) {
            skip_space();
            v.array.push_back(value(depth + 1));
            skip_space();
            if (peek(',')) {
                ++pos_;
                continue;
            }
            if (peek(']')) {
                ++pos_;
                return;
            }
            fail_at_char("',' or ']'");
        }
    }

    bool literal(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    bool digit_here() const {
        return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9';
    }

    void digits() {
        if (!digit_here()) fail_at_char("a digit");
        while (digit_here()) ++pos_;
    }

    // JSON's number grammar; integers (no fraction, no exponent) stay exact in int64.
    void parse_number(JsonValue& v) {
        const std::size_t start = pos_;
        if (peek('-')) ++pos_;
        if (peek('0') && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' &&
            text_[pos_ + 1] <= '9')
            fail("a number with a leading zero");
        digits();
        bool integral = true;
        if (peek('.')) {
            ++pos_;
            digits();
            integral = false;
        }
        if (peek('e') || peek('E')) {
            ++pos_;
            if (peek('+') || peek('-')) ++pos_;
            digits();
            integral = false;
        }
        const char* first = text_.data() + start;
        const char* last = text_.data() + pos_;
        if (integral) {
            v.kind = JsonValue::Kind::integer;
            const auto r = std::from_chars(first, last, v.integer);
            if (r.ec != std::errc() || r.ptr != last) {
                pos_ = start;
                fail("an integer out of the 64-bit range");
            }
            v.number = double(v.integer);
        } else {
            v.kind = JsonValue::Kind::number;
            const auto r = std::from_chars(first, last, v.number);
            if (r.ec != std::errc() || r.ptr != last) {
                pos_ = start;
                fail("a number out of the double range");
            }
        }
    }

    unsigned hex4() {
        if (pos_ + 4 > text_.size()) fail("a truncated \\u escape");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            const char c = text_[pos_];
            code <<= 4;
            if (c >= '0' && c <= '9')
                code |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f')
                code |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                code |= unsigned(c - 'A' + 10);
            else
                fail_at_char("a hexadecimal digit");
        }
        return code;
    }

    static void append_utf8(std::string& out, unsigned code) {
        if (code < 0x80) {
            out += char(code);
        } else if (code < 0x800) {
            out += char(0xC0 | (code >> 6));
            out += char(0x80 | (code & 0x3F));
        } else if (code < 0x10000) {
            out += char(0xE0 | (code >> 12));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
        } else {
            out += char(0xF0 | (code >> 18));
            out += char(0x80 | ((code >> 12) & 0x3F));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
        }
    }

    std::string parse_string() {
        expect('"');
        std::string out;
        for (;;) {
            if (pos_ >= text_.size()) fail("an unterminated string");
            const char c = text_[pos_];
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
            if (c != '\\') {
                out += c;
                ++pos_;
                continue;
            }
            ++pos_;
            if (pos_ >= text_.size()) fail("an unterminated string");
            const char e = text_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    const std::size_t at = pos_ - 2;
                    unsigned code = hex4();
                    if (code >= 0xD800 && code < 0xDC00) {
                        if (!(pos_ + 1 < text_.size() && text_[pos_] == '\\' &&
                              text_[pos_ + 1] == 'u')) {
                            pos_ = at;
                            fail("a lone high surrogate in a \\u escape");
                        }
                        pos_ += 2;
                        const unsigned low = hex4();
                        if (low < 0xDC00 || low >= 0xE000) {
                            pos_ = at;
                            fail("a high surrogate not followed by a low one");
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    } else if (code >= 0xDC00 && code < 0xE000) {
                        pos_ = at;
                        fail("a lone low surrogate in a \\u escape");
                    }
                    append_utf8(out, code);
                    break;
                }
                default: pos_ -= 2; fail(std::string("an unknown escape \\") + e);
            }
        }
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

}  // namespace

std::string_view JsonValue::kind_name() const {
    switch (kind) {
        case Kind::object: return "object";
        case Kind::array: return "array";
        case Kind::string: return "string";
        case Kind::integer: return "integer";
        case Kind::number: return "number";
        case Kind::boolean: return "boolean";
        case Kind::null: return "null";
    }
    return "?";
}

JsonValue parse_json(std::string_view text) {
    return Parser(text).parse_document();
}

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += "\\u00";
                    out += kHex[(c >> 4) & 0xF];
                    out += kHex[c & 0xF];
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

}  // namespace tandem
