//! The wiki's tiny markup, rendered to HTML deterministically, and HTML escaping.
//!
//! - A blank line ends a paragraph; the lines of a paragraph are joined by `<br>`.
//! - A line `# Title` is a heading, `* item` a list item.
//! - `[[Name]]` links to the page `Name`, `[[Name|text]]` with other text; a link to a page
//!   that does not exist yet is marked (class `new`) and leads to its edit form. A link whose
//!   name breaks the naming rules stays text.
//!
//! Everything the user wrote is escaped: user HTML is never rendered raw.

use crate::page_name::valid_name;

/// `text` with HTML's special characters escaped, safe both as element content and inside a
/// quoted attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The HTML of a page's text; `exists` says whether a linked page exists.
pub fn render(text: &str, exists: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut in_list = false;
    let flush = |out: &mut String, paragraph: &mut Vec<&str>| {
        if paragraph.is_empty() {
            return;
        }
        let lines: Vec<String> = paragraph.iter().map(|l| inline(l, exists)).collect();
        out.push_str("<p>");
        out.push_str(&lines.join("<br>\n"));
        out.push_str("</p>\n");
        paragraph.clear();
    };
    for line in text.lines() {
        let line = line.trim_end();
        let item = line.strip_prefix("* ");
        if in_list && item.is_none() {
            out.push_str("</ul>\n");
            in_list = false;
        }
        if line.is_empty() {
            flush(&mut out, &mut paragraph);
        } else if let Some(title) = line.strip_prefix("# ") {
            flush(&mut out, &mut paragraph);
            out.push_str(&format!("<h2>{}</h2>\n", inline(title.trim(), exists)));
        } else if let Some(item) = item {
            flush(&mut out, &mut paragraph);
            if !in_list {
                out.push_str("<ul>\n");
                in_list = true;
            }
            out.push_str(&format!("<li>{}</li>\n", inline(item.trim(), exists)));
        } else {
            paragraph.push(line);
        }
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    flush(&mut out, &mut paragraph);
    out
}

/// One line: escaped text with `[[links]]`.
fn inline(line: &str, exists: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("[[") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("]]") else {
            break;
        };
        let inner = &after[..end];
        let (name, label) = match inner.split_once('|') {
            Some((name, label)) => (name.trim(), label.trim()),
            None => (inner.trim(), inner.trim()),
        };
        out.push_str(&escape(&rest[..start]));
        if valid_name(name).is_ok() && !label.is_empty() {
            if exists(name) {
                out.push_str(&format!("<a href=\"/wiki/{name}\">{}</a>", escape(label)));
            } else {
                out.push_str(&format!(
                    "<a class=\"new\" href=\"/wiki/{name}/edit\" title=\"{name} does not exist yet\">{}</a>",
                    escape(label)
                ));
            }
        } else {
            out.push_str(&escape(&rest[start..start + 2 + end + 2]));
        }
        rest = &after[end + 2..];
    }
    out.push_str(&escape(rest));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_pages(_: &str) -> bool {
        false
    }

    #[test]
    fn user_html_is_escaped() {
        let html = render("<script>alert('x')</script> & \"q\"", &no_pages);
        assert_eq!(
            html,
            "<p>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;</p>\n"
        );
        assert!(!html.contains("<script"));
    }

    #[test]
    fn paragraphs_headings_lists_and_links() {
        let exists = |n: &str| n == "Home";
        let html = render(
            "# Title\none\ntwo\n\n* a [[Home]]\n* [[Other|the other]]\nafter [[bad name]] [[x",
            &exists,
        );
        assert_eq!(
            html,
            "<h2>Title</h2>\n<p>one<br>\ntwo</p>\n<ul>\n<li>a <a href=\"/wiki/Home\">Home</a></li>\n<li><a class=\"new\" href=\"/wiki/Other/edit\" title=\"Other does not exist yet\">the other</a></li>\n</ul>\n<p>after [[bad name]] [[x</p>\n"
        );
    }

    #[test]
    fn a_link_label_is_escaped() {
        let html = render("[[Home|<b>x</b>]]", &|_| true);
        assert_eq!(
            html,
            "<p><a href=\"/wiki/Home\">&lt;b&gt;x&lt;/b&gt;</a></p>\n"
        );
    }
}
