"""Generated sections of docs/REPRODUCTION.md (imported by jobs/study/study.py): a section between
two marker comments is replaced when the study reruns its variants, the rest of the file kept."""
import os


def update_section(root, lines, marks, what):
    """Replace the section between `marks` (begin, end) of REPRODUCTION.md with `lines` (which
    begin with marks[0] and end with marks[1]), or insert it before the chaos check (or at the
    end) when the file has none; `what` names the section in what is printed."""
    if not lines:
        print(f"no finished runs of {what}: docs/REPRODUCTION.md left as it is")
        return
    path = os.path.join(root, "docs", "REPRODUCTION.md")
    old = open(path).read() if os.path.exists(path) else ""
    section = "\n".join(lines).strip("\n") + "\n"
    if marks[0] in old and marks[1] in old:
        head, rest = old.split(marks[0], 1)
        new = head + marks[0] + section.split(marks[0], 1)[1].rstrip("\n") + rest.split(marks[1], 1)[1]
    elif "## Chaos" in old:
        head, rest = old.split("## Chaos", 1)
        new = head + section + "\n## Chaos" + rest
    else:
        new = old + "\n" + section
    with open(path, "w") as f:
        f.write(new)
    print(f"updated the section of {path} on {what}")
