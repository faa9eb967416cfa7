//! Consistency conditions 1–4 of clause 3.3.2, checked per warehouse and district on a quiet
//! database, on any engine (SwizzleDB: point reads in transactions of their own, scans outside
//! transactions).

use std::ops::Bound::{Excluded, Included};

use super::schema::{key, key_part, District, Order, Record, Warehouse};
use super::workload::{missing, t, Tables, Tpcc, DISTRICTS};
use crate::engine::Engine;
use crate::workloads::WorkloadError;

fn read<E: Engine, R: Record>(db: &E, tree: &E::Table, k: &[u8]) -> Result<R, WorkloadError> {
    db.read(tree, k, |v| v.map(R::decode).ok_or_else(|| missing(R::TABLE, k))?).map(|(r, _)| r)
}

/// Calls `f` with the key and value of every record of `tree` with `prefix`.
fn scan<E: Engine>(
    db: &E,
    tree: &E::Table,
    prefix: &[u8],
    f: impl FnMut(&[u8], &[u8]) -> Result<(), WorkloadError>,
) -> Result<(), WorkloadError> {
    let mut end = prefix.to_vec();
    // Prefixes here are whole key parts below u32::MAX, so adding one to the last byte that is
    // not 0xFF gives the first key past them.
    while end.last() == Some(&0xFF) {
        end.pop();
    }
    if let Some(b) = end.last_mut() {
        *b += 1;
    }
    db.for_each_in(tree, Included(prefix), Excluded(&end[..]), f)
}

fn fail(condition: &'static str, detail: String) -> Result<(), WorkloadError> {
    Err(WorkloadError::Inconsistent { condition, detail })
}

pub(super) fn verify<E: Engine>(tpcc: &Tpcc, db: &E) -> Result<(), WorkloadError> {
    let tables = Tables::open(db)?;
    let tb = |i| tables.tree(i);
    for w_id in 1..=tpcc.config.warehouses {
        let w: Warehouse = read(db, tb(t::WAREHOUSE), &key([w_id]))?;
        let mut d_ytd = 0;
        for d_id in 1..=DISTRICTS {
            let d: District = read(db, tb(t::DISTRICT), &key([w_id, d_id]))?;
            d_ytd += d.ytd;
            let prefix = key([w_id, d_id]);
            let (mut max_o, mut ol_cnt) = (0u32, 0i64);
            scan(db, tb(t::ORDER), &prefix, |k, v| {
                max_o = max_o.max(key_part(k, 2));
                ol_cnt += Order::decode(v)?.ol_cnt;
                Ok(())
            })?;
            let (mut min_no, mut max_no, mut new_orders) = (u32::MAX, 0u32, 0u64);
            scan(db, tb(t::NEW_ORDER), &prefix, |k, _| {
                let o = key_part(k, 2);
                (min_no, max_no, new_orders) = (min_no.min(o), max_no.max(o), new_orders + 1);
                Ok(())
            })?;
            let mut lines = 0i64;
            scan(db, tb(t::ORDER_LINE), &prefix, |_, _| {
                lines += 1;
                Ok(())
            })?;
            let at = format!("warehouse {w_id} district {d_id}");
            if d.next_o_id - 1 != max_o || (new_orders > 0 && max_no != max_o) {
                let no = if new_orders > 0 { max_no.to_string() } else { "none".into() };
                return fail(
                    "3.3.2.2",
                    format!(
                        "{at}: D_NEXT_O_ID - 1 = {}, max(O_ID) = {max_o}, max(NO_O_ID) = {no}",
                        d.next_o_id - 1
                    ),
                );
            }
            if new_orders > 0 && u64::from(max_no - min_no) + 1 != new_orders {
                return fail(
                    "3.3.2.3",
                    format!(
                        "{at}: max(NO_O_ID) - min(NO_O_ID) + 1 = {} but {new_orders} new orders",
                        max_no - min_no + 1
                    ),
                );
            }
            if ol_cnt != lines {
                return fail("3.3.2.4", format!("{at}: sum(O_OL_CNT) = {ol_cnt} but {lines} order lines"));
            }
        }
        if w.ytd != d_ytd {
            return fail(
                "3.3.2.1",
                format!("warehouse {w_id}: W_YTD = {} but sum(D_YTD) = {d_ytd} (cents)", w.ytd),
            );
        }
    }
    Ok(())
}
