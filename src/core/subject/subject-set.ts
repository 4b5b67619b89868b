// A set of subject patterns that answers "does this pattern collide with any member?"
// (could both match one subject): overlapping stream subjects. Literal members are a
// plain Set and wildcard members a Sublist, so the usual case — thousands of literal
// subjects, a few wildcards — costs a hash lookup and a match per subject. The
// literals are put in a trie too only once a wildcard pattern is asked about.
import { subjectHasWildcard } from "./subject.js"
import { Sublist } from "./sublist.js"

interface Entry {
  readonly subject: string
  readonly queue: undefined
}

export class SubjectSet {
  private readonly literals = new Set<string>()
  private readonly wildcards = new Sublist<Entry>({ cacheSize: 0 })
  /** The literals as a trie, built on the first wildcard query and kept from then on. */
  private literalTrie: Sublist<Entry> | undefined = undefined

  constructor(subjects: Iterable<string> = []) {
    for (const s of subjects) this.add(s)
  }

  /** Adds a valid subject or pattern. */
  add(subject: string): void {
    if (subjectHasWildcard(subject)) {
      this.wildcards.insert({ subject, queue: undefined })
      return
    }
    if (this.literals.has(subject)) return
    this.literals.add(subject)
    this.literalTrie?.insert({ subject, queue: undefined })
  }

  /** Whether a valid subject or pattern could match a subject some member also matches. */
  collides(subject: string): boolean {
    if (!subjectHasWildcard(subject)) return this.literals.has(subject) || this.wildcards.hasInterest(subject)
    if (this.wildcards.collides(subject)) return true
    if (this.literalTrie === undefined) {
      this.literalTrie = new Sublist<Entry>({ cacheSize: 0 })
      for (const s of this.literals) this.literalTrie.insert({ subject: s, queue: undefined })
    }
    return this.literalTrie.collides(subject)
  }
}
