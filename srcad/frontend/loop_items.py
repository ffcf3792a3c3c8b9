"""`for row in Y: row /= s`: a write into a loop's item, which writes into Y when the items are
views and rebinds the item when they are numbers, rewritten in the user's tree (parse.py runs it)
so that both cases are plain subscript reads and writes, chosen when the code runs."""
import ast
import copy


def _loop_item_writes(fn, env):
    """`for row in Y: row /= np.sum(row)` with Y a local name: writing into the loop's item writes
    into Y when the items are views (rows of an array, arrays in a list) and rebinds the item when
    they are numbers. Which one is decided when the code runs (rt.lists.items_are_views):

        if items_are_views(Y):
            for row_index in range(len(Y)):   # the body, `row` read and written as Y[row_index]
        else:
            for row_index in range(len(Y)):
                row = loop_item(Y[row_index])  # a value of its own
                # the body as written

    Applied when the body writes into `row` in place (`row op= ...`, `row[...] = ...`), never
    rebinds `row` or `Y` otherwise, and `row` is not read after the loop; Y is no parameter (a
    write into the caller's array is the alias pass's to check, when the code runs)."""
    from ..runtime import lists as rt_lists
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(fn)
                                                                           if isinstance(a, ast.arg)}

    def helper(base, obj):
        own = base
        while own in names or (own in env and env[own] is not obj):
            own += "_"
        env[own] = obj
        names.add(own)
        return own
    for owner in [n for n in ast.walk(fn) if hasattr(n, "body") and isinstance(n.body, list)]:
        for field_ in ("body", "orelse"):
            block = getattr(owner, field_, None) or []
            for k, st in enumerate(block):
                if not (isinstance(st, ast.For) and isinstance(st.target, ast.Name) and isinstance(st.iter, ast.Name)
                        and not st.orelse):
                    continue
                row, seq = st.target.id, st.iter.id
                if seq in params:       # the caller's array: left to the alias pass (checked when it runs)
                    continue
                body_nodes = [n for b in st.body for n in ast.walk(b)]
                writes = any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == row
                             or isinstance(n, (ast.Assign, ast.AugAssign)) and any(
                                 isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == row
                                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
                             for n in body_nodes)
                rebinds = any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in (row, seq)
                              and not _augmented_target(n, body_nodes) for n in body_nodes) \
                    or any(isinstance(n, (ast.AugAssign, ast.Assign)) and any(
                        isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == seq
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])) for n in body_nodes)
                reads = sum(isinstance(n, ast.Name) and n.id == row for n in ast.walk(fn)) \
                    != 1 + sum(isinstance(n, ast.Name) and n.id == row for n in body_nodes)
                nested = any(isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in body_nodes)
                if not writes or rebinds or reads or nested:
                    continue
                index = helper(row + "_index", None)
                env.pop(index)
                views, item = helper("items_are_views", rt_lists.items_are_views), helper("loop_item", rt_lists.loop_item)

                def at(node, _seq=seq, _index=index):
                    return ast.copy_location(ast.Subscript(ast.Name(_seq, ast.Load()), ast.Name(_index, ast.Load()),
                                                           node.ctx), node)

                indexed = any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == row
                              and isinstance(n.ctx, ast.Store) for n in body_nodes)

                class _Put(ast.NodeTransformer):
                    def visit_Name(self, node, _row=row, _at=at):
                        return _at(node) if node.id == _row else node

                    def visit_Subscript(self, node, _row=row, _seq=seq, _index=index):
                        # row[j] is Y[i, j] (one index, so that a write lands in Y)
                        if isinstance(node.value, ast.Name) and node.value.id == _row:
                            inner = self.visit(node.slice)
                            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                            idx = ast.Tuple([ast.Name(_index, ast.Load())] + list(parts), ast.Load())
                            return ast.copy_location(ast.Subscript(ast.Name(_seq, ast.Load()), idx, node.ctx), node)
                        return self.generic_visit(node)

                def loop(body, _st=st, _seq=seq, _index=index):
                    rng = ast.Call(ast.Name("range", ast.Load()), [ast.Call(ast.Name("len", ast.Load()),
                                                                            [ast.Name(_seq, ast.Load())], [])], [])
                    out = ast.For(ast.Name(_index, ast.Store()), rng, body, [], type_comment=None)
                    ast.copy_location(out, _st)
                    ast.copy_location(out.iter, _st.iter)
                    out.end_lineno, out.end_col_offset = _st.end_lineno, _st.end_col_offset
                    return ast.fix_missing_locations(out)
                viewed = loop([_Put().visit(_copy(b)) for b in st.body])
                first = ast.copy_location(ast.Assign([ast.Name(row, ast.Store())], ast.Call(
                    ast.Name(item, ast.Load()), [at(ast.Name(row, ast.Load()))], [])), st)
                ast.fix_missing_locations(first)
                plain = loop([first] + [_copy(b) for b in st.body])
                test = ast.copy_location(ast.Call(ast.Name(views, ast.Load()), [ast.Name(seq, ast.Load()),
                                                                                ast.Constant(indexed)], []), st)
                new = ast.copy_location(ast.If(test, [viewed], [plain]), st)
                new.end_lineno, new.end_col_offset = st.end_lineno, st.end_col_offset
                block[k] = ast.fix_missing_locations(new)


def _augmented_target(name_node, nodes):
    return any(isinstance(n, ast.AugAssign) and n.target is name_node for n in nodes)


def _copy(node):
    return copy.deepcopy(node)
