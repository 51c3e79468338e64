#include "scangate_toml.h"

#include <toml++/toml.h>

#include <cstdio>
#include <deque>
#include <sstream>
#include <string>
#include <vector>

struct sg_toml_document {
  std::deque<std::string> strings;  // stable storage for keys and texts
  std::vector<sg_toml_entry> entries;
};

namespace {

const char *keep(sg_toml_document &d, std::string s) {
  d.strings.push_back(std::move(s));
  return d.strings.back().c_str();
}

void add(sg_toml_document &d, const std::string &key, int32_t index, const toml::node &node) {
  sg_toml_entry e{};
  e.key = keep(d, key);
  e.index = index;
  e.line = node.source().begin.line;
  e.column = node.source().begin.column;
  if (auto s = node.as_string()) {
    e.type = SG_TOML_STRING;
    e.text = keep(d, s->get());
  } else {
    std::ostringstream out;
    if (auto i = node.as_integer()) {
      e.type = SG_TOML_INTEGER;
      e.integer = i->get();
      out << i->get();
    } else if (auto f = node.as_floating_point()) {
      e.type = SG_TOML_FLOAT;
      e.real = f->get();
      out << f->get();
    } else if (auto b = node.as_boolean()) {
      e.type = SG_TOML_BOOLEAN;
      e.boolean = b->get() ? 1 : 0;
      out << (b->get() ? "true" : "false");
    } else {
      e.type = SG_TOML_OTHER;
      out << "(" << node.type() << ")";
    }
    e.text = keep(d, out.str());
  }
  d.entries.push_back(e);
}

void walk(sg_toml_document &d, const std::string &prefix, const toml::table &table) {
  for (auto &&[k, v] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (auto t = v.as_table()) {
      walk(d, key, *t);
    } else if (auto a = v.as_array()) {
      // An empty array still names its key, so "unknown key" checks see it.
      if (a->empty()) {
        sg_toml_entry e{};
        e.key = keep(d, key);
        e.index = -2;
        e.type = SG_TOML_OTHER;
        e.text = keep(d, "[]");
        e.line = v.source().begin.line;
        e.column = v.source().begin.column;
        d.entries.push_back(e);
      }
      int32_t i = 0;
      for (auto &&element : *a) add(d, key, i++, element);
    } else {
      add(d, key, -1, v);
    }
  }
}

}  // namespace

extern "C" {

sg_toml_document *sg_toml_parse(const char *text, size_t size, char *error, size_t error_capacity,
                                uint32_t *error_line, uint32_t *error_column) {
  *error_line = 0;
  *error_column = 0;
  try {
    toml::table table = toml::parse(std::string_view(text, size));
    auto *d = new sg_toml_document();
    walk(*d, "", table);
    return d;
  } catch (const toml::parse_error &e) {
    std::snprintf(error, error_capacity, "%.*s", static_cast<int>(e.description().size()),
                  e.description().data());
    *error_line = e.source().begin.line;
    *error_column = e.source().begin.column;
  } catch (const std::exception &e) {
    std::snprintf(error, error_capacity, "%s", e.what());
  } catch (...) {
    std::snprintf(error, error_capacity, "unknown error in the TOML parser");
  }
  return nullptr;
}

size_t sg_toml_count(const sg_toml_document *d) { return d ? d->entries.size() : 0; }
const sg_toml_entry *sg_toml_entry_at(const sg_toml_document *d, size_t i) {
  return d && i < d->entries.size() ? &d->entries[i] : nullptr;
}
void sg_toml_free(sg_toml_document *d) { delete d; }

}  // extern "C"
