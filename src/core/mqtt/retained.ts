// Retained messages by topic level, so that a SUBSCRIBE finds what its filter matches
// without looking at every retained message: a literal level is one Map lookup, `+`
// visits the children of one node, `#` the subtree under one node. A lookup is a
// cursor that resumes where it stopped, so the shell can spread a huge match over
// event-loop turns (each `take` is bounded in matches and in nodes visited). A cursor
// yields only messages retained before it was made: later ones reach the new
// subscription live. Walks use explicit stacks: a topic may have tens of thousands of levels.

/** One topic level. Children are created on demand; a node without message and children is pruned. */
class Level<M> {
  children: Map<string, Level<M>> | undefined = undefined
  msg: M | undefined = undefined
  /** When `msg` was stored (the tree's clock). */
  stamp = 0
}

const DOLLAR = 0x24

/** What a cursor has left to do: match the filter from level `i` at `node`, or walk every descendant / child. */
type Frame<M> =
  | { readonly kind: "match"; readonly node: Level<M>; readonly i: number }
  | { readonly kind: "all"; readonly iter: Iterator<[string, Level<M>]>; readonly skipDollar: boolean }
  | { readonly kind: "plus"; readonly iter: Iterator<[string, Level<M>]>; readonly i: number }

/**
 * The retained messages matching one filter, found step by step. While a cursor is
 * paused the tree may change: a message removed meanwhile is not yielded, one stored
 * (or replaced) after the cursor was made is not either, and nothing breaks it.
 */
export class RetainedCursor<M> {
  private readonly stack: Array<Frame<M>>
  /** Nodes visited so far (the cost of the lookup). */
  steps = 0

  constructor(root: Level<M>, private readonly levels: ReadonlyArray<string>, private readonly before: number) {
    this.stack = [{ kind: "match", node: root, i: 0 }]
  }

  get done(): boolean {
    return this.stack.length === 0
  }

  /**
   * Appends at most `maxMatches` messages to `out`, visiting at most `maxSteps` nodes;
   * returns true when the lookup is complete.
   */
  take(out: Array<M>, maxMatches: number, maxSteps: number): boolean {
    const stack = this.stack
    const levels = this.levels
    const n = levels.length
    let found = 0
    const stopAt = this.steps + maxSteps
    while (stack.length > 0 && found < maxMatches && this.steps < stopAt) {
      const top = stack[stack.length - 1]
      if (top.kind === "match") {
        stack.pop()
        this.steps++
        const { node, i } = top
        if (i === n) {
          if (node.msg !== undefined && node.stamp < this.before) {
            out.push(node.msg)
            found++
          }
          continue
        }
        const f = levels[i]
        if (f === "#") {
          // `a/#` matches `a` itself [MQTT-4.7.1-2]; at the root there is no message.
          if (node.msg !== undefined && node.stamp < this.before) {
            out.push(node.msg)
            found++
          }
          if (node.children !== undefined) stack.push({ kind: "all", iter: node.children.entries(), skipDollar: i === 0 })
        } else if (f === "+") {
          if (node.children !== undefined) stack.push({ kind: "plus", iter: node.children.entries(), i })
        } else {
          const child = node.children?.get(f)
          if (child !== undefined) stack.push({ kind: "match", node: child, i: i + 1 })
        }
        continue
      }
      const r = top.iter.next()
      if (r.done === true) {
        stack.pop()
        continue
      }
      this.steps++
      const [name, child] = r.value
      // Topics starting with `$` are not matched by a filter starting with a wildcard [MQTT-4.7.2-1].
      if (top.kind === "plus") {
        if (top.i === 0 && name.charCodeAt(0) === DOLLAR) continue
        stack.push({ kind: "match", node: child, i: top.i + 1 })
        continue
      }
      if (top.skipDollar && name.charCodeAt(0) === DOLLAR) continue
      if (child.msg !== undefined && child.stamp < this.before) {
        out.push(child.msg)
        found++
      }
      if (child.children !== undefined) stack.push({ kind: "all", iter: child.children.entries(), skipDollar: false })
    }
    return stack.length === 0
  }
}

/** Retained messages of one account, by topic name (validated by the caller). */
export class RetainedTree<M extends { readonly topic: string }> {
  private readonly root = new Level<M>()
  private count = 0
  private clock = 0

  get size(): number {
    return this.count
  }

  get(topic: string): M | undefined {
    let node: Level<M> | undefined = this.root
    for (const level of topic.split("/")) {
      node = node.children?.get(level)
      if (node === undefined) return undefined
    }
    return node.msg
  }

  /** Store (or replace) the message retained on `topic`. */
  set(topic: string, msg: M): void {
    let node = this.root
    for (const level of topic.split("/")) {
      const children: Map<string, Level<M>> = (node.children ??= new Map())
      let child = children.get(level)
      if (child === undefined) {
        child = new Level()
        children.set(level, child)
      }
      node = child
    }
    if (node.msg === undefined) this.count++
    node.msg = msg
    node.stamp = this.clock++
  }

  /** Remove the message retained on `topic`; false when there was none. */
  delete(topic: string): boolean {
    const levels = topic.split("/")
    const path: Array<Level<M>> = [this.root]
    let node = this.root
    for (const level of levels) {
      const child = node.children?.get(level)
      if (child === undefined) return false
      path.push(child)
      node = child
    }
    if (node.msg === undefined) return false
    node.msg = undefined
    this.count--
    // Drop the levels that now lead nowhere.
    for (let i = levels.length; i > 0; i--) {
      const n = path[i]
      if (n.msg !== undefined || (n.children !== undefined && n.children.size > 0)) break
      const parent = path[i - 1]
      parent.children!.delete(levels[i - 1])
      if (parent.children!.size === 0) parent.children = undefined
    }
    return true
  }

  /** Every retained message (depth first). */
  values(): Array<M> {
    const out: Array<M> = []
    const stack: Array<Level<M>> = [this.root]
    while (stack.length > 0) {
      const node = stack.pop()!
      if (node.msg !== undefined) out.push(node.msg)
      if (node.children !== undefined) for (const child of node.children.values()) stack.push(child)
    }
    return out
  }

  /** The messages a valid topic filter matches, as a cursor (see RetainedCursor). */
  match(filter: string): RetainedCursor<M> {
    return new RetainedCursor(this.root, filter.split("/"), this.clock)
  }
}
